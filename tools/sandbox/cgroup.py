"""Per-run control groups: one memory, process-count and CPU bound over every process of a sandboxed run.

A run's processes join its group before they exec (the launcher writes its own pid into the group's
`cgroup.procs` while still root), so children, compilers and tmpfs pages they touch are all charged to
it. cgroup v2 is used where this process's own group delegates memory and pids; otherwise the v1
`memory`, `pids`, `cpu` and `cpuacct` hierarchies when they are mounted writable; otherwise none (the
caller falls back to rlimits and size-capped tmpfs and says so).

Groups are created under this process's own group (v1: per hierarchy) in a `turngym-sandbox` child
(v1 `cpu`: directly beside it, see `_detect`), so whatever limits the host already puts on this process
still apply to the sandboxes it starts.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import signal
import threading
import time
from dataclasses import dataclass

PARENT_NAME = "turngym-sandbox"
RUN_PREFIX = "turngym-run-"
_V1_CONTROLLERS = ("memory", "pids", "cpu", "cpuacct")
_counter = itertools.count()


@dataclass(frozen=True)
class CgroupSupport:
    """What this machine offers: `version` 1 or 2 (0: none) and the parent dirs runs are created in."""

    version: int
    parents: dict[str, str]  # controller (v2: "unified") -> parent dir of the per-run groups
    reason: str = ""  # why not, when version == 0
    memsw: bool = False  # v1: memory.memsw.* exists, so swap use can be bounded too

    @property
    def available(self) -> bool:
        """True when per-run groups can be made here."""
        return self.version > 0


_support: CgroupSupport | None = None
_support_lock = threading.Lock()


def support() -> CgroupSupport:
    """Detect (once per process) whether per-run cgroups can be created, preferring delegated v2."""
    global _support
    with _support_lock:
        if _support is None:
            _support = _detect()
        return _support


def _detect() -> CgroupSupport:
    if os.environ.get("TURNGYM_SANDBOX_NO_CGROUPS"):
        return CgroupSupport(0, {}, "disabled by TURNGYM_SANDBOX_NO_CGROUPS")
    if os.geteuid() != 0:
        return CgroupSupport(0, {}, "not root (no delegated cgroup to create run groups in)")
    mounts, own = _mounts(), _own_groups()
    if mounts is None or own is None:
        return CgroupSupport(0, {}, "cannot read /proc/self/mountinfo or /proc/self/cgroup")
    v2 = _try_v2(mounts, own)
    if v2 is not None:
        return v2
    parents: dict[str, str] = {}
    missing = []
    for ctl in _V1_CONTROLLERS:
        where = mounts.get(ctl)
        if where is None or ctl not in own:
            missing.append(ctl)
            continue
        mountpoint, root = where
        rel = os.path.relpath(own[ctl], root) if own[ctl] != root else ""
        # The CPU scheduler weighs a group as one task: under one shared parent, all sandboxes of the
        # machine would split a single task's share. Beside this process's own tasks, each run weighs
        # what one process did before.
        sub = "" if ctl == "cpu" else PARENT_NAME
        parent = os.path.normpath(os.path.join(mountpoint, rel, sub))
        try:
            os.makedirs(parent, exist_ok=True)
        except OSError as exc:
            missing.append(f"{ctl} ({exc.strerror})")
            continue
        parents[ctl] = parent
    if "memory" not in parents or "pids" not in parents:
        return CgroupSupport(0, {}, f"cgroup v1 controllers not usable: {', '.join(missing)}")
    memsw = os.path.exists(os.path.join(parents["memory"], "memory.memsw.limit_in_bytes"))
    return CgroupSupport(1, parents, memsw=memsw)


def _mounts() -> dict[str, tuple[str, str]] | None:
    """controller -> (mount point, hierarchy root of that mount); "unified" for cgroup2."""
    out: dict[str, tuple[str, str]] = {}
    try:
        with open("/proc/self/mountinfo") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 3:
            continue
        fstype, options = tail[0], tail[2].split(",")
        if "rw" not in fields[5].split(","):
            continue  # read-only: nothing can be created there
        if fstype == "cgroup2":
            out.setdefault("unified", (fields[4], fields[3]))
        elif fstype == "cgroup":
            for opt in options:
                if opt in _V1_CONTROLLERS:
                    out.setdefault(opt, (fields[4], fields[3]))
    return out


def _own_groups() -> dict[str, str] | None:
    out: dict[str, str] = {}
    try:
        with open("/proc/self/cgroup") as fh:
            for line in fh:
                _, ctls, path = line.rstrip("\n").split(":", 2)
                for ctl in ctls.split(",") if ctls else ["unified"]:
                    out[ctl] = path
    except (OSError, ValueError):
        return None
    return out


def _try_v2(mounts: dict[str, tuple[str, str]], own: dict[str, str]) -> CgroupSupport | None:
    if "unified" not in mounts or "unified" not in own:
        return None
    mountpoint, root = mounts["unified"]
    here = os.path.normpath(os.path.join(mountpoint, os.path.relpath(own["unified"], root)))
    try:
        with open(os.path.join(here, "cgroup.controllers")) as fh:
            offered = set(fh.read().split())
    except OSError:
        return None
    if not {"memory", "pids"} <= offered:
        return None  # e.g. a hybrid host whose v2 tree delegates only hugetlb: use v1
    wanted = [c for c in ("memory", "pids", "cpu") if c in offered]
    parent = os.path.join(here, PARENT_NAME)
    try:
        # Enabling controllers for children fails on a group that holds processes (v2's no-internal-
        # process rule) unless they are enabled already (a delegated leaf set up by the host).
        _write(os.path.join(here, "cgroup.subtree_control"), " ".join(f"+{c}" for c in wanted))
        os.makedirs(parent, exist_ok=True)
        _write(os.path.join(parent, "cgroup.subtree_control"), " ".join(f"+{c}" for c in wanted))
    except OSError:
        return None
    return CgroupSupport(2, {"unified": parent})


def _write(path: str, value: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)


def _read(path: str) -> str:
    with open(path) as fh:
        return fh.read()


def _stat(text: str, key: str) -> int:
    """The value of `key` in a flat-keyed cgroup file (`key value` per line); 0 when absent or unreadable."""
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name == key:
            try:
                return int(value)
            except ValueError:
                return 0
    return 0


class RunCgroup:
    """The control group(s) of one run: created with its limits, read for usage, emptied and removed."""

    def __init__(self, memory_mb: int, pids: int, cpus: float, tag: str = "") -> None:
        sup = support()
        if not sup.available:
            raise RuntimeError(f"cgroups unavailable: {sup.reason}")
        self.version = sup.version
        name = f"{RUN_PREFIX}{tag or 'x'}-{os.getpid()}-{next(_counter)}"
        self.dirs: dict[str, str] = {}
        try:
            self._make(sup, name, memory_mb, pids, cpus)
        except BaseException:
            self.remove()
            raise

    def _make(self, sup: CgroupSupport, name: str, memory_mb: int, pids: int, cpus: float) -> None:
        for ctl, parent in sup.parents.items():  # v2: the one "unified" parent
            path = os.path.join(parent, name)
            os.mkdir(path)
            self.dirs[ctl] = path
        memory = str(memory_mb * 1024 * 1024)
        _write(self._file("memory", "memory.limit_in_bytes", "memory.max"), memory)
        # The run cannot spill into swap: v2 allows it none, v1 bounds memory+swap at the same value.
        if self.version == 2:
            with contextlib.suppress(FileNotFoundError):
                _write(self._file("memory", "", "memory.swap.max"), "0")
        elif sup.memsw:
            _write(self._file("memory", "memory.memsw.limit_in_bytes"), memory)
        _write(self._file("pids", "pids.max"), str(pids))
        if cpus > 0 and self.cpu_limited:
            if self.version == 2:
                _write(self._file("cpu", "", "cpu.max"), f"{int(100000 * cpus)} 100000")
            else:
                period = int(_read(self._file("cpu", "cpu.cfs_period_us")))
                _write(self._file("cpu", "cpu.cfs_quota_us"), str(int(period * cpus)))

    def _file(self, v1_controller: str, v1_name: str, v2_name: str | None = None) -> str:
        """A control file: v2 keeps every controller in one dir, v1 has a dir per controller (KeyError
        when that controller is not mounted)."""
        if self.version == 2:
            return os.path.join(self.dirs["unified"], v2_name or v1_name)
        return os.path.join(self.dirs[v1_controller], v1_name)

    @property
    def procs_files(self) -> tuple[str, ...]:
        """The `cgroup.procs` files a process writes its pid into to join this run (one per hierarchy)."""
        return tuple(os.path.join(d, "cgroup.procs") for d in self.dirs.values())

    @property
    def cpu_limited(self) -> bool:
        """True when a CPU quota holds (v1 `cpu` or v2 `cpu.max`)."""
        try:
            return os.path.exists(self._file("cpu", "cpu.cfs_quota_us", "cpu.max"))
        except KeyError:
            return False

    def cpu_seconds(self) -> float:
        """CPU time (user + system) used so far by every process that was in the run."""
        try:
            text = _read(self._file("cpuacct", "cpuacct.usage", "cpu.stat"))
            return int(text) / 1e9 if self.version == 1 else _stat(text, "usage_usec") / 1e6
        except (OSError, KeyError, ValueError):
            return 0.0

    def peak_memory_bytes(self) -> int:
        """Highest memory charge of the run (processes, page cache and tmpfs pages it touched)."""
        try:
            return int(_read(self._file("memory", "memory.max_usage_in_bytes", "memory.peak")))
        except (OSError, ValueError, KeyError):
            return 0

    def oom_kills(self) -> int:
        """How many processes the kernel killed for going over the run's memory bound."""
        try:
            return _stat(_read(self._file("memory", "memory.oom_control", "memory.events")), "oom_kill")
        except (OSError, KeyError):
            return 0

    def pids(self) -> list[int]:
        """Processes in the run now."""
        try:
            return [int(x) for x in _read(self._file("pids", "cgroup.procs")).split()]
        except (OSError, ValueError, KeyError):
            return []

    def kill_all(self, max_rounds: int = 200) -> bool:
        """SIGKILL every process in the run until none is left; True when the group is empty.

        pids.max bounds how many a fork loop can add between two passes, so this converges.
        """
        if self.version == 2:
            with contextlib.suppress(OSError):
                _write(os.path.join(self.dirs["unified"], "cgroup.kill"), "1")
        for i in range(max_rounds):
            pids = self.pids()
            if not pids:
                return True
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            if i:
                time.sleep(0.001)  # SIGKILLed processes take a moment to leave the group
        return not self.pids()

    def remove(self) -> None:
        """Kill what is left and delete the group dirs (retrying while dying processes leave)."""
        if self.dirs:
            self.kill_all()
        for ctl, path in list(self.dirs.items()):
            for attempt in range(200):
                try:
                    os.rmdir(path)
                    break
                except FileNotFoundError:
                    break
                except OSError as exc:
                    if exc.errno != errno.EBUSY or attempt == 199:
                        break  # left for the next sweep_stale(); never fail a run over cleanup
                    time.sleep(0.002)
            self.dirs.pop(ctl, None)


def sweep_stale() -> int:
    """Remove run groups left by processes of this machine that died (their pid is gone); count them."""
    sup = support()
    removed = 0
    for parent in sup.parents.values():
        try:
            names = os.listdir(parent)
        except OSError:
            continue
        for name in names:
            parts = name.split("-")
            if not name.startswith(RUN_PREFIX) or len(parts) < 5 or not parts[-2].isdigit():
                continue
            if pid_alive(int(parts[-2])):
                continue
            path = os.path.join(parent, name)
            with contextlib.suppress(OSError, ValueError):
                for pid in (int(x) for x in _read(os.path.join(path, "cgroup.procs")).split()):
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                os.rmdir(path)
                removed += 1
    return removed


def pid_alive(pid: int) -> bool:
    """True while a process with this pid exists (one we may not signal counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
