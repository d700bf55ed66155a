"""One process of verl's SFT trainer for the warm start: ``python -m trainer.warm_start.worker CONFIG``.

:func:`trainer.warm_start.runner.warm_start` starts it with RANK/WORLD_SIZE/MASTER_* set and, on CPU,
``VERL_PLATFORM=cpu`` so verl loads the ``trainer.cpu`` plugin. verl's own ``run_sft`` asks
torch for the backend ``"cpu:gloo,cpu:gloo"`` on CPU (``verl/utils/distributed.py`` ~62), which
torch rejects, so on CPU the process group is created here with plain gloo.
"""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    """Load the composed SFT config from argv[0] and train."""
    import torch.distributed
    from omegaconf import OmegaConf
    from verl.trainer.sft_trainer import SFTTrainer
    from verl.utils.distributed import destroy_global_process_group, initialize_global_process_group

    config = OmegaConf.load(argv[0])
    if config.trainer.device == "cpu":
        torch.distributed.init_process_group(backend="gloo")
    else:
        initialize_global_process_group()
    try:
        SFTTrainer(config=config).fit()
    finally:
        destroy_global_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
