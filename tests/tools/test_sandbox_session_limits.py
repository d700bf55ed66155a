"""python_session under the sandbox's whole-run limits: forked children, written files and background
processes are bounded and ended like a LocalSandbox run's, checked from outside the sandbox."""

from __future__ import annotations

import os

import pytest

from tools.sandbox import LocalSandbox
from tools.sandbox.cgroup import support
from tools.sandbox.isolation import UidSlot, bwrap_path
from tools.sandbox.session import PythonSession

pytestmark = pytest.mark.skipif(
    bwrap_path() is None or not support().available or os.geteuid() != 0,
    reason="needs root, bubblewrap and per-run cgroups",
)


@pytest.fixture(autouse=True)
def private_uid_range(monkeypatch):
    """A uid range of this test process only, so other sandboxes on the machine are not counted."""
    monkeypatch.setattr(UidSlot, "BASE", 460_000 + (os.getpid() % 1000) * 64)
    monkeypatch.setattr(UidSlot, "COUNT", 64)


def _uid_processes(uid: int) -> int:
    """Live (non-zombie) processes of `uid`."""
    count = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            if entry.stat().st_uid != uid:
                continue
            with open(f"{entry.path}/stat", "rb") as fh:
                count += fh.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
        except (OSError, IndexError):
            continue
    return count


FORK_MEMORY = """
import os, time
kids = []
for i in range(5):
    pid = os.fork()
    if pid == 0:
        block = bytearray(150 * 1024 * 1024)
        for j in range(0, len(block), 4096): block[j] = 1
        time.sleep(2)
        os._exit(0)
    kids.append(pid)
codes = [os.waitpid(k, 0)[1] for k in kids]
print('killed', sum(os.WIFSIGNALED(c) for c in codes))
"""


def test_forked_children_share_the_session_memory_bound():
    # 5 x 150 MB would be 750 MB; each child alone is under the 256 MB address-space rlimit.
    with PythonSession(LocalSandbox(timeout_s=30, memory_mb=256)) as session:
        result = session.run(FORK_MEMORY)
        assert result.status == "ok", result
        killed = int(result.stdout.split()[-1])
        assert killed >= 2  # at most one 150 MB child fits beside the interpreter


def test_disk_fill_stops_at_the_work_dir_cap():
    cell = """
written = 0
try:
    for i in range(20):
        with open(f'fill{i}', 'wb') as fh:
            for _ in range(60): fh.write(b'x' * 1024 * 1024); written += 1
except OSError as exc:
    stopped = exc.errno
import os
for i in range(20):
    if os.path.exists(f'fill{i}'): os.remove(f'fill{i}')
print('stopped', stopped)
written
"""
    with PythonSession(LocalSandbox(timeout_s=60, memory_mb=512, disk_mb=64)) as session:
        result = session.run(cell)
        assert result.status == "ok", result
        assert "stopped 28" in result.stdout  # ENOSPC
        assert int(result.stdout.split()[-1]) <= 64


def test_background_processes_end_with_the_session():
    cell = """
import os, subprocess
for i in range(3):
    subprocess.Popen(['/bin/sleep', '300'], start_new_session=True)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        import time; time.sleep(300)
    os._exit(0)
'started'
"""
    session = PythonSession(LocalSandbox(timeout_s=20))
    result = session.run(cell)
    assert result.status == "ok", result
    uid = session._slot.uid
    assert _uid_processes(uid) >= 5  # interpreter, three sleeps, the double-forked one (and bwrap's init)
    session.close()
    assert _uid_processes(uid) == 0
