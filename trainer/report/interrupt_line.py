"""The line ``trainer.run`` prints on Ctrl-C: what the same command will do next, and where the log is.

It said "run the same command again to resume from the last checkpoint (verl's and Ray's output:
<turngym.output_dir>/train.log)" however far the run had got: with the placeholder printed literally, and
during the warm start or before the first checkpoint, when there is nothing to resume from and the same
command starts over. ``RunProgress`` follows the command (its config once composed, the phase it is in)
and words the line from that and the checkpoint on disk at the moment of the interrupt.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainer.run_folder.files import read_run_file

BEFORE_START = "checks"
WARM_START = "warm start"
TRAINING = "training"


@dataclass
class RunProgress:
    """How far one ``trainer.run`` command got: its config (once composed) and its phase."""

    cfg: Any = None
    phase: str = BEFORE_START

    def _checkpoint_step(self) -> int | None:
        folder = Path(str(self.cfg.trainer.default_local_dir)).expanduser()
        try:
            return int((read_run_file(folder / "latest_checkpointed_iteration.txt") or "").strip())
        except (OSError, ValueError):
            return None

    def line(self) -> str:
        """The Ctrl-C line: resume from step N, or start over (and why), with the run's log path.

        Example:
            >>> RunProgress().line()
            'interrupted before training started; nothing was written to the run folder: run the same command to start'
        """
        if self.cfg is None or self.phase == BEFORE_START:
            return (
                "interrupted before training started; nothing was written to the run folder: run the same "
                "command to start"
            )
        log = Path(str(self.cfg.turngym.output_dir)).expanduser().resolve() / "train.log"
        where = f"(verl's and Ray's output: {log})"
        step = self._checkpoint_step()
        if step is not None and str(self.cfg.trainer.resume_mode) != "disable":
            return f"interrupted; run the same command again to resume after step {step}, its last checkpoint {where}"
        if self.phase == WARM_START:
            return (
                "interrupted during the warm start, before any checkpoint: the same command runs the warm "
                f"start again, then RL from step 0 {where}"
            )
        return (
            "interrupted before the first checkpoint (trainer.save_freq="
            f"{self.cfg.trainer.save_freq}): nothing to resume; the same command starts the run over {where}"
        )
