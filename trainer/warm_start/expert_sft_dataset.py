"""verl's MultiTurnSFTDataset for turngym's expert demonstrations (tool schemas stored as JSON text).

Loaded by verl's SFT trainer through ``data.custom_cls`` (``pkg://trainer.warm_start.expert_sft_dataset``).
"""

from __future__ import annotations

import json

from verl.utils.dataset.multiturn_sft_dataset import MultiTurnSFTDataset


class ExpertSFTDataset(MultiTurnSFTDataset):
    """Decodes the ``tools`` column written by :func:`trainer.warm_start.expert_demos.write_demonstrations`."""

    def _read_files_and_process(self) -> None:
        super()._read_files_and_process()
        if self.tools is not None:
            # a missing value (no tools) reads back as pandas' NA, which chat templates cannot iterate
            self.tools = [
                json.loads(t) if isinstance(t, str) else t if isinstance(t, list) else None
                for t in self.tools
            ]
