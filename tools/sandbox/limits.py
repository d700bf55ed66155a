"""`Limits` of one sandboxed process tree and `limiter`, the preexec function that applies them."""

from __future__ import annotations

import os
import resource
from dataclasses import dataclass

IS_ROOT = os.geteuid() == 0


@dataclass(frozen=True)
class Limits:
    """Resource limits for one process tree."""

    cpu_s: int = 10
    memory_mb: int = 512
    nproc: int = 64
    fsize_mb: int = 64
    nofile: int = 256

    def rlimits(self) -> list[tuple[int, int]]:
        """(resource, value) pairs to apply in the child."""
        out = [
            (resource.RLIMIT_CPU, max(1, int(self.cpu_s))),
            (resource.RLIMIT_FSIZE, self.fsize_mb * 1024 * 1024),
            (resource.RLIMIT_NOFILE, self.nofile),
            (resource.RLIMIT_CORE, 0),
        ]
        if self.memory_mb > 0:
            out.append((resource.RLIMIT_AS, self.memory_mb * 1024 * 1024))
        if IS_ROOT:  # only meaningful with a private uid: the count is per real uid
            out.append((resource.RLIMIT_NPROC, self.nproc))
        return out


def limiter(limits: Limits, uid: int | None = None, cgroup_procs: tuple[str, ...] = ()):
    """A preexec function: join the run's cgroups, lower rlimits, then drop to `uid` (the launcher's
    order: joining needs root, so the uid drop comes last)."""
    pairs = limits.rlimits()
    setrlimit = resource.setrlimit

    def apply() -> None:
        for path in cgroup_procs:
            fd = os.open(path, os.O_WRONLY)
            try:
                os.write(fd, str(os.getpid()).encode())
            finally:
                os.close(fd)
        for res, value in pairs:
            setrlimit(res, (value, value))
        if uid is not None:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)

    return apply
