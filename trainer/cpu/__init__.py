"""verl plugin that lets verl 0.9.1's PPO trainer run on CPU.

Loaded by verl itself through ``VERL_USE_EXTERNAL_MODULES=trainer.cpu`` (``verl/__init__.py``
~49) in every process that imports verl, including Ray workers; ``python -m trainer.run`` sets
it together with ``VERL_PLATFORM=cpu``. Importing it:

- registers the ``cpu`` platform (gloo, a ``torch.cpu`` shim, Ray resource name "GPU");
- registers the ``hf`` rollout (a transformers server replica that receives weights each step);
- when ``VERL_PLATFORM=cpu``, arranges the small patches in :mod:`trainer.cpu.patches`.
"""

import os

from trainer.cpu import patches
from trainer.cpu.platform import CPUPlatform

CPU_PLATFORM_NAME = "cpu"

patches.install_rollout()
if os.environ.get("VERL_PLATFORM", "").strip().lower() == CPU_PLATFORM_NAME:
    patches.install_cpu()

__all__ = ["CPU_PLATFORM_NAME", "CPUPlatform"]
