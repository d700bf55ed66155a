"""Spare runs: a run that takes one keeps every limit, a broken spare is never handed out, none is left
behind once they are discarded."""

from __future__ import annotations

import os
import signal
import time

import pytest

from tools.sandbox import LocalSandbox
from tools.sandbox.cgroup import support
from tools.sandbox.deferred import flush
from tools.sandbox.isolation import UidSlot, bwrap_path, launcher_path
from tools.sandbox.spares import discard_all, spare_groups

pytestmark = pytest.mark.skipif(
    not (bwrap_path() and support().available and launcher_path()),
    reason="spares need bubblewrap, per-run cgroups and the C launcher",
)


@pytest.fixture(autouse=True)
def private_uid_range(monkeypatch):
    monkeypatch.setattr(UidSlot, "BASE", 310_000 + (os.getpid() % 1000) * 64)
    monkeypatch.setattr(UidSlot, "COUNT", 64)


def _ready_sandbox(**kwargs) -> tuple[LocalSandbox, set[str]]:
    """A sandbox whose first run is done and whose spare is made; the spare groups' dirs."""
    sb = LocalSandbox(timeout_s=5, memory_mb=256, **kwargs)
    assert sb.run("pass").status == "ok"
    flush()
    return sb, _spare_dirs()


def _spare_dirs() -> set[str]:
    return {d for g in spare_groups() for d in g.dirs.values()}


# 300 MB in 50 MB files into the 512 MB work dir: the run's memory bound (256 MB) stops it.
TMPFS_FILL = """
for n in range(6):
    with open(f'/sandbox/fill{n}', 'wb') as fh:
        for _ in range(50):
            fh.write(b'x' * (1 << 20))
"""


@pytest.mark.parametrize(
    ("code", "status", "message"),
    [
        ("a = []\nwhile True:\n    a.append(bytearray(10**7))", "error", ""),
        (
            "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass",
            "timeout",
            "",
        ),
        (TMPFS_FILL, "error", "memory limit of 256 MB"),
    ],
    ids=["memory_bomb", "fork_bomb", "tmpfs_fill"],
)
def test_a_run_on_a_spare_keeps_its_limits(code, status, message):
    sb, ready = _ready_sandbox(disk_mb=512)
    assert ready
    r = sb.run(code)
    flush()
    assert not ready <= _spare_dirs(), "the run made its own group instead of taking the spare"
    assert r.status == status and message in r.message, r


def test_a_run_on_a_spare_sees_only_its_own_fds_and_uid():
    sb, ready = _ready_sandbox()
    r = sb.run("import os\nprint(sorted(os.listdir('/proc/self/fd')), os.getuid(), os.getgid())")
    flush()
    assert not ready <= _spare_dirs()
    fds, uid, gid = r.stdout.rsplit("]", 1)[0] + "]", *r.stdout.rsplit("]", 1)[1].split()
    assert fds == "['0', '1', '2', '3']"  # 3 is listdir's own: no orders pipe, no seccomp program
    assert uid == gid and int(uid) != 0


def test_a_dead_spare_is_never_handed_out():
    sb, ready = _ready_sandbox()
    killed = []
    for group in spare_groups():
        while not group.pids():  # the launcher joins its group on its own time
            time.sleep(0.001)
        for pid in group.pids():
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
    assert killed
    for pid in killed:  # dead (a zombie until the pool reaps it), not only signalled
        while _state(pid) not in ("Z", "X", ""):
            time.sleep(0.001)
    r = sb.run("print(6 * 7)")
    assert (r.status, r.stdout) == ("ok", "42\n"), r


def _state(pid: str) -> str:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0].decode()
    except (OSError, IndexError):
        return ""


def test_discarded_spares_leave_nothing():
    _ready_sandbox()
    dirs = _spare_dirs()
    assert dirs
    discard_all()
    assert spare_groups() == []
    assert not any(os.path.exists(d) for d in dirs)


def test_a_forked_child_does_not_hold_a_spare_open():
    sb, ready = _ready_sandbox()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child only waits: its copies of the spares' pipes must be closed already
        os.close(write_end)
        os.read(read_end, 1)
        os._exit(0)
    try:
        r = sb.run("import sys\nprint(repr(sys.stdin.read()))")
        assert not ready <= _spare_dirs() or not ready
        assert (r.status, r.stdout) == ("ok", "''\n"), r  # EOF at once, not a wait for the timeout
    finally:
        os.close(write_end)
        os.waitpid(pid, 0)
        os.close(read_end)
