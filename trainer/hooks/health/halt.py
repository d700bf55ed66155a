"""A run stopped by a health guard (``turngym.health.halt_on``): the exception that ends verl's loop,
the record it leaves in the run's folder, and the exit code ``python -m trainer.run`` returns.

The trainer saves a checkpoint of the halting step, writes ``<turngym.output_dir>/health_halt.json``
and ends training normally; ``trainer.run`` reads the record once Ray is down, prints its reason in
one line on stderr and exits with ``HALT_EXIT_CODE``. The next run of the same command removes the
record and resumes from that checkpoint (and halts again if the cause is still there). The record is a
run-folder file like any other (``trainer/run_folder/files.py``): written through a new file renamed over it,
read without following a link, and a link, FIFO or folder in its place is refused in one line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from trainer.run_folder.files import read_run_file, remove_run_file, write_run_file

HALT_EXIT_CODE = 3
HALT_FILE = "health_halt.json"


class HealthHalt(Exception):
    """Raised inside verl's training loop to stop it at a step boundary; carries the one-line reason."""

    def __init__(self, step: int, reason: str, checkpoint: str | None) -> None:
        super().__init__(reason)
        self.step, self.reason, self.checkpoint = step, reason, checkpoint

    def line(self) -> str:
        """The reason in one line: what crossed, where the checkpoint is, what to do, the exit code."""
        kept = f"checkpoint kept: {self.checkpoint}" if self.checkpoint else "no checkpoint could be saved"
        return (
            f"halted by turngym.health.halt_on at step {self.step}: {self.reason}; {kept}; fix the cause "
            f"(or drop the metric from turngym.health.halt_on) and run the same command to resume "
            f"(exit code {HALT_EXIT_CODE})"
        )


def halt_path(output_dir: str | Path) -> Path:
    """Where a run in `output_dir` records its halt."""
    return Path(output_dir).expanduser() / HALT_FILE


def write_halt(output_dir: str | Path, halt: HealthHalt) -> Path:
    """Record `halt` in the run's folder; returns the file."""
    path = halt_path(output_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"step": halt.step, "reason": halt.reason, "checkpoint": halt.checkpoint, "line": halt.line()}
    write_run_file(path, json.dumps(record) + "\n")  # never through a link planted in the folder
    return path


def read_halt(output_dir: str | Path) -> dict[str, Any] | None:
    """The halt record of the run in `output_dir`, or None when its last training did not halt.

    Raises:
        RunFileError: a link, FIFO or folder stands where the record would be (one line).
    """
    path = halt_path(output_dir)
    try:
        record = json.loads(read_run_file(path) or "")  # RunFileError (a UsageError) goes through
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and record.get("line") else None


def clear_halt(output_dir: str | Path) -> None:
    """Forget an earlier halt (a new training of the run starts); a link there is removed, not followed."""
    remove_run_file(halt_path(output_dir))


def halt_exit_code(output_dir: str | Path) -> tuple[int, str | None]:
    """``(HALT_EXIT_CODE, reason line)`` when the run in `output_dir` halted, else ``(0, None)``.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     before = halt_exit_code(folder)
    ...     _ = write_halt(folder, HealthHalt(7, "health/nonfinite_rewards 2 > 0", "ckpt/global_step_7"))
    ...     code, line = halt_exit_code(folder)
    >>> before, code, line.startswith("halted by turngym.health.halt_on at step 7")
    ((0, None), 3, True)
    """
    record = read_halt(output_dir)
    if record is None:
        return 0, None
    return HALT_EXIT_CODE, str(record["line"])
