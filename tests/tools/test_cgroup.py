"""RunCgroup on this machine's real cgroups: limits written, usage read, processes killed, dirs removed."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tools.sandbox.cgroup import RunCgroup, support

pytestmark = pytest.mark.skipif(
    not support().available, reason=f"no per-run cgroups here: {support().reason}"
)

MB = 1024 * 1024


def _read(path: str) -> str:
    with open(path) as fh:
        return fh.read().strip()


def test_limits_usage_kill_and_removal():
    group = RunCgroup(memory_mb=64, pids=8, cpus=0.5, tag="test")
    try:
        assert _read(group._file("memory", "memory.limit_in_bytes", "memory.max")) == str(64 * MB)
        assert _read(group._file("pids", "pids.max")) == "8"
        assert group.cpu_limited
        assert group.pids() == [] and group.oom_kills() == 0
        # A process that joins the group, burns some CPU, touches some memory, then waits to be killed.
        code = (
            "import os, sys\n"
            "for p in sys.argv[1:]:\n    open(p, 'w').write(str(os.getpid()))\n"
            "x = bytearray(8 * 2**20)\n"
            "n = 0\nwhile n < 3_000_000:\n    n += 1\n"
            "print('ready', flush=True)\nimport time\ntime.sleep(300)\n"
        )
        proc = subprocess.Popen([sys.executable, "-c", code, *group.procs_files], stdout=subprocess.PIPE)
        assert proc.stdout.readline() == b"ready\n"
        assert group.pids() == [proc.pid]
        assert group.cpu_seconds() > 0
        assert group.peak_memory_bytes() >= 8 * MB
        assert group.kill_all()
        proc.wait()
        assert proc.returncode == -9 and group.pids() == []
    finally:
        group.remove()
    assert group.dirs == {}


def test_memory_bound_counts_an_oom_kill():
    group = RunCgroup(memory_mb=48, pids=8, cpus=0, tag="test")
    try:
        code = "import sys\nfor p in sys.argv[1:]:\n    open(p, 'w').write('0')\nx = bytearray(200 * 2**20)\n"
        done = subprocess.run([sys.executable, "-c", code, *group.procs_files], capture_output=True)
        assert done.returncode != 0
        assert group.oom_kills() >= 1 or b"MemoryError" in done.stderr
    finally:
        paths = list(group.dirs.values())
        group.remove()
    assert not any(os.path.exists(p) for p in paths)
