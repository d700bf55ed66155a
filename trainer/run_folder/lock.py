"""One run at a time in a run folder: ``<turngym.output_dir>/run.lock``.

Two commands training into one folder would interleave metrics.jsonl, overwrite each other's
checkpoints and summaries. The first run holds an exclusive ``flock`` on ``run.lock`` for as long as it
lives, with its PID, host, start time and command written in the file; a second run refuses in one line
naming that process. The kernel drops the lock when the process dies however it ends (SIGKILL, a
crash), so a lock file left by a killed run is stale by construction: the next run takes it over and
says so. A run that stops before it wrote anything removes the lock file and the folder it made for it.
The lock file is opened without following a link and refused in one line unless it is a regular file
(``trainer/run_folder/files.py``): a planted link made a run overwrite the file it named, a FIFO hung the check.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import sys
import time
from pathlib import Path
from typing import Any

from trainer.checks.config_error import ConfigError
from trainer.run_folder.files import open_run_file, read_run_file

LOCK_FILE = "run.lock"


def _holder(path: Path) -> dict[str, Any]:
    try:
        holder = json.loads(read_run_file(path) or "")
    except (OSError, ValueError):
        return {}
    return holder if isinstance(holder, dict) else {}


def _describe(holder: dict[str, Any]) -> str:
    pid = holder.get("pid", "?")
    where = f" on {holder['host']}" if holder.get("host") and holder["host"] != socket.gethostname() else ""
    since = f", started {holder['started']}" if holder.get("started") else ""
    command = f": {holder['command']}" if holder.get("command") else ""
    return f"process {pid}{where}{since}{command}"


def _busy_message(folder: Path, holder: dict[str, Any]) -> str:
    return (
        f"{folder} is in use by another run ({_describe(holder)}); wait for it to end or stop it "
        "(kill PID), or train into another folder with turngym.run_name=NAME or turngym.output_dir=DIR"
    )


def _can_lock(path: Path) -> bool:
    """Whether no live process holds the lock (probed on a separate descriptor, released at once).

    A link or a FIFO in its place raises RunFileError (opening a FIFO used to wait for a writer forever).
    """
    try:
        fd = open_run_file(path, os.O_RDONLY)
    except FileNotFoundError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)  # closing the descriptor releases a lock taken by the probe
    return True


def check_unlocked(folder: str | Path) -> None:
    """Raise ConfigError in one line when a live run holds ``folder``'s lock; writes nothing.

    Args:
        folder: the run folder (``turngym.output_dir``).
    """
    path = Path(folder).expanduser() / LOCK_FILE
    if os.path.lexists(path) and not _can_lock(path):
        raise ConfigError(_busy_message(Path(folder).expanduser(), _holder(path)))


class RunLock:
    """The run folder's lock, held from ``acquire`` until ``release`` (or the process's end).

    Example:
        >>> import tempfile
        >>> from trainer.run_folder.lock import RunLock, check_unlocked
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     lock = RunLock(folder, command="python -m trainer.run env=guess-number")
        ...     lock.acquire()
        ...     try:
        ...         check_unlocked(folder)
        ...     except Exception as exc:
        ...         busy = str(exc)
        ...     lock.release()
        ...     check_unlocked(folder)
        >>> "is in use by another run (process" in busy and busy.count(": python -m trainer.run env=guess-number)")
        1
    """

    def __init__(self, folder: str | Path, command: str | None = None) -> None:
        self.folder = Path(folder).expanduser()
        # What the holder was started with, for the refusal (default: this process's command line).
        self.command = command or " ".join(["python -m trainer.run", *sys.argv[1:]])
        self.path = self.folder / LOCK_FILE
        self._fd: int | None = None
        self._made: list[Path] = []  # folders acquire created, deepest first
        # The earlier holder of a stale lock taken over by ``acquire`` (empty when there was none).
        self.stale: dict[str, Any] = {}

    def acquire(self) -> None:
        """Take the lock, making the folder if needed; ConfigError naming the holder if a live run has it."""
        missing = [p for p in (self.folder, *self.folder.parents) if not p.exists()]
        self.folder.mkdir(parents=True, exist_ok=True)
        self._made = missing
        while True:
            try:
                # Never through a link (it truncated the file it named) nor on a FIFO (it hung).
                fd = open_run_file(self.path, os.O_RDWR | os.O_CREAT)
            except Exception:
                self._undo_folder()
                raise
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                self._undo_folder()
                raise ConfigError(_busy_message(self.folder, _holder(self.path))) from None
            # A run that ended between our open and our lock unlinked the file we hold: lock the new one.
            try:
                same = os.fstat(fd).st_ino == os.lstat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        previous = _holder(self.path)
        if previous.get("pid") not in (None, os.getpid()):
            self.stale = previous  # the kernel released its flock, so that process is gone
        record = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
            "command": self.command,
        }
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(record) + "\n").encode(), 0)
        self._fd = fd

    def release(self) -> None:
        """Remove the lock file and drop the lock; the folders ``acquire`` made too, while they are empty."""
        if self._fd is None:
            return
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()  # unlinked while still locked: a waiting run then locks a fresh file
        os.close(self._fd)
        self._fd = None
        self._undo_folder()

    def _undo_folder(self) -> None:
        for folder in self._made:
            try:
                folder.rmdir()  # only when empty: nothing of a run is ever removed
            except OSError:
                break
        self._made = []

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
