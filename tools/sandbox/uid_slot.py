"""`UidSlot`: an unprivileged uid held for one run; `kill_uid` and `kill_group` end what runs under it."""

from __future__ import annotations

import errno
import fcntl
import os
import signal
import tempfile
import threading

from tools.sandbox.limits import IS_ROOT


class UidSlot:
    """An unprivileged uid held exclusively (across processes, via flock) for one run or session."""

    BASE = int(os.environ.get("TURNGYM_SANDBOX_UID_BASE", "210000"))
    COUNT = int(os.environ.get("TURNGYM_SANDBOX_UID_COUNT", "512"))
    _lock_dir = os.path.join(tempfile.gettempdir(), "turngym-sandbox-uids")
    _next = 0
    _mutex = threading.Lock()

    def __init__(self) -> None:
        self.uid: int | None = None
        self._fd: int | None = None
        if not IS_ROOT:
            return
        os.makedirs(self._lock_dir, mode=0o700, exist_ok=True)
        with UidSlot._mutex:
            start = UidSlot._next
            UidSlot._next = (UidSlot._next + 1) % self.COUNT
        for i in range(self.COUNT):
            uid = self.BASE + (start + i) % self.COUNT
            fd = os.open(os.path.join(self._lock_dir, str(uid)), os.O_CREAT | os.O_RDWR, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue
            self.uid, self._fd = uid, fd
            return
        raise RuntimeError(f"all {self.COUNT} sandbox uids are busy")

    def release(self, sweep: bool = True) -> None:
        """Kill anything still running as this uid (unless the caller knows nothing is), then free it."""
        if self.uid is not None and sweep:
            kill_uid(self.uid)
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        self.uid = None


def kill_uid(uid: int, max_rounds: int = 50) -> int:
    """SIGKILL every process whose owner is `uid`; rescan until a pass finds nothing new (a fork loop
    may add processes between passes). Already-signalled processes are only dying, not counted again."""
    signalled: set[int] = set()
    for _ in range(max_rounds):
        new = 0
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            pid = int(entry.name)
            if pid in signalled:
                continue
            try:
                if entry.stat(follow_symlinks=False).st_uid != uid:
                    continue
                os.kill(pid, signal.SIGKILL)
            except (FileNotFoundError, ProcessLookupError):
                continue
            signalled.add(pid)
            if not _is_zombie(entry.path):  # a zombie is already dead; only its parent can reap it
                new += 1
        if not new:
            break
    return len(signalled)


def _is_zombie(proc_path: str) -> bool:
    try:
        with open(f"{proc_path}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] in (b"Z", b"X")
    except (OSError, IndexError):
        return True


def kill_group(pgid: int) -> None:
    """SIGKILL a process group, ignoring one that is already gone."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError as exc:
        if exc.errno not in (errno.ESRCH, errno.EPERM):
            raise
