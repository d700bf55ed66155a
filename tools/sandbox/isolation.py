"""The isolation primitives LocalSandbox and PythonSession are built from, one module per job:

- `limits`: `Limits` of a process tree and the preexec `limiter` that applies them
- `spawn`: starting a command in its session, cgroups, rlimits and uid (C launcher or preexec)
- `uid_slot`: `UidSlot` (a private uid per run), `kill_uid`, `kill_group`
- `workdir`: the run's private (tmpfs) work dir, its input and fetched files
- `bwrap`: whether bubblewrap isolates fully here, and its command line
- `capped_run`: `run_capped`, the loop that feeds, reads, caps, times out and kills one run

This module only re-exports them, so `from tools.sandbox.isolation import ...` keeps working.
"""

from __future__ import annotations

from tools.sandbox.bwrap import SANDBOX_DIR, bwrap_argv, bwrap_path, bwrap_problem
from tools.sandbox.capped_run import RawRun, run_capped
from tools.sandbox.limits import IS_ROOT, Limits, limiter
from tools.sandbox.spawn import SECCOMP_FD_SLOT, launcher_path, spawn
from tools.sandbox.uid_slot import UidSlot, kill_group, kill_uid
from tools.sandbox.workdir import make_workdir, mount_tmpfs, read_files, remove_workdir, write_files

__all__ = [
    "IS_ROOT",
    "SANDBOX_DIR",
    "SECCOMP_FD_SLOT",
    "Limits",
    "RawRun",
    "UidSlot",
    "bwrap_argv",
    "bwrap_path",
    "bwrap_problem",
    "kill_group",
    "kill_uid",
    "launcher_path",
    "limiter",
    "make_workdir",
    "mount_tmpfs",
    "read_files",
    "remove_workdir",
    "run_capped",
    "spawn",
    "write_files",
]
