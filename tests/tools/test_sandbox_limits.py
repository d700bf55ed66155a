"""LocalSandbox limits that hold for the whole run, measured from outside the sandbox.

Each hostile run is watched from this process while it runs: the run's cgroup counters (peak memory,
CPU seconds), the resident memory of every process of the run's private uid, the host's /dev/shm, the
work dir's tmpfs usage and the host disk. Nothing here asserts timings.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
import time

import pytest

from tools.sandbox import LocalSandbox, local
from tools.sandbox.cgroup import RUN_PREFIX, support
from tools.sandbox.deferred import flush
from tools.sandbox.isolation import UidSlot, bwrap_path
from tools.sandbox.spares import discard_all, spare_groups

MB = 1024 * 1024
HAVE_BWRAP = bwrap_path() is not None
HAVE_CGROUPS = support().available
needs_bwrap = pytest.mark.skipif(not HAVE_BWRAP, reason="bubblewrap + seccomp not available")
needs_cgroups = pytest.mark.skipif(not HAVE_CGROUPS, reason="no per-run cgroups here")


@pytest.fixture(autouse=True)
def private_uid_range(monkeypatch):
    """A uid range of this test process only, so other sandboxes on the machine are not counted."""
    monkeypatch.setattr(UidSlot, "BASE", 400_000 + (os.getpid() % 1000) * 64)
    monkeypatch.setattr(UidSlot, "COUNT", 64)


class Watcher:
    """Polls, from outside, what a run uses while it runs; keeps the peaks."""

    def __init__(self) -> None:
        self.peak_cgroup_memory = 0
        self.cpu_seconds = 0.0
        self.peak_rss = 0
        self.peak_processes = 0
        self.peak_host_shm = 0
        self.peak_workdir = 0
        self.peak_rss_plus_shm = 0
        self._shm0 = _used("/dev/shm")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> Watcher:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.poll()
            time.sleep(0.01)

    def poll(self) -> None:
        for group in _run_groups():
            self.peak_cgroup_memory = max(
                self.peak_cgroup_memory, _int(group.get("memory"), "memory.max_usage_in_bytes")
            )
            self.cpu_seconds = max(self.cpu_seconds, _int(group.get("cpuacct"), "cpuacct.usage") / 1e9)
        rss, count = _uid_range_rss()
        shm = max(0, _used("/dev/shm") - self._shm0)
        # Only mounted work dirs are a run's capped tmpfs; statvfs of a plain dir (another run's uncapped
        # work dir, still being removed in the background) reports the whole host disk. Writes that reach
        # the host disk are what the tests' `_used("/tmp")` check catches.
        work = sum(_used(p) for p in _uid_range_workdirs() if os.path.ismount(p))
        self.peak_rss = max(self.peak_rss, rss)
        self.peak_processes = max(self.peak_processes, count)
        self.peak_host_shm = max(self.peak_host_shm, shm)
        self.peak_workdir = max(self.peak_workdir, work)
        self.peak_rss_plus_shm = max(self.peak_rss_plus_shm, rss + shm)


def _int(directory: str | None, name: str) -> int:
    if directory is None:
        return 0
    try:
        with open(os.path.join(directory, name)) as fh:
            return int(fh.read())
    except (OSError, ValueError):
        return 0


def _run_groups(spares: bool = True) -> list[dict[str, str]]:
    """Live run groups created by this test process, one dict (controller -> dir) per run (with
    `spares=False`, not counting spare groups no run has used yet)."""
    mine = f"-{os.getpid()}-"
    groups: dict[str, dict[str, str]] = {}
    unused = {os.path.basename(d) for s in spare_groups() for d in s.dirs.values()}
    for ctl, parent in support().parents.items():
        try:
            names = os.listdir(parent)
        except OSError:
            continue
        for name in names:
            if name.startswith(RUN_PREFIX) and mine in name and (spares or name not in unused):
                groups.setdefault(name, {})[ctl] = os.path.join(parent, name)
    return list(groups.values())


def _uid_range_rss() -> tuple[int, int]:
    """Proportional resident bytes and count of the live processes of this test's sandbox uids."""
    lo, hi = UidSlot.BASE, UidSlot.BASE + UidSlot.COUNT
    total = count = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            if not lo <= entry.stat().st_uid < hi:
                continue
            with open(f"{entry.path}/stat", "rb") as fh:
                if fh.read().rsplit(b")", 1)[1].split()[0] in (b"Z", b"X"):
                    continue  # dead, waiting to be reaped: holds no memory
            # Pss, not Rss: the run's processes share the interpreter's pages, Rss would count them
            # once per process.
            with open(f"{entry.path}/smaps_rollup") as fh:
                for line in fh:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1]) * 1024
                        break
            count += 1
        except (OSError, ValueError, IndexError):
            continue
    return total, count


def _uid_range_workdirs() -> list[str]:
    import glob
    import tempfile

    lo, hi = UidSlot.BASE, UidSlot.BASE + UidSlot.COUNT
    out = []
    for path in glob.glob(os.path.join(tempfile.gettempdir(), "turngym-sbx-*")):
        try:
            if lo <= os.stat(path).st_uid < hi:
                out.append(path)
        except OSError:
            continue
    return out


def _used(path: str) -> int:
    try:
        st = os.statvfs(path)
    except OSError:
        return 0
    return (st.f_blocks - st.f_bfree) * st.f_frsize


def _watch(sb: LocalSandbox, code: str, language: str = "python", **kwargs):
    with Watcher() as w:
        result = sb.run(code, language, **kwargs)
        w.poll()
    return result, w


# 3 GB in 50 MB files (one file would stop at the 64 MB file-size rlimit first).
SHM_FILL = """
written = 0
try:
    for n in range(60):
        with open(f'/dev/shm/fill{n}', 'wb') as fh:
            for _ in range(50):
                fh.write(b'x' * (1 << 20))
                written += 1
except OSError as e:
    print('stopped', e.errno, written)
"""

MANY_PROCESSES = """
import os, time
kids = []
for i in range(12):
    pid = os.fork()
    if pid == 0:
        try:
            block = bytearray(180 * 1024 * 1024)
            for j in range(0, len(block), 4096):
                block[j] = 1
            time.sleep(3)
        finally:
            os._exit(0)
    kids.append(pid)
for pid in kids:
    os.waitpid(pid, 0)
print('all done')
"""

BUSY_16 = """
import os
for _ in range(15):
    if os.fork() == 0:
        break
while True:
    pass
"""

DISK_5GB = """
written = 0
try:
    for n in range(100):
        with open(f'big{n}.bin', 'wb') as fh:
            for _ in range(50):
                fh.write(b'x' * (1 << 20))
                written += 1
except OSError as e:
    print('stopped', e.errno)
print('written MB', written)
"""

# The preprocessor doubles a token 2^27 times: gcc needs gigabytes (and minutes) for this.
COMPILE_BOMB = (
    "#define D0 +1\n"
    + "".join(f"#define D{i} D{i - 1} D{i - 1}\n" for i in range(1, 28))
    + "int main() { return 0 D27; }\n"
)


@needs_bwrap
@needs_cgroups
@pytest.mark.slow
def test_dev_shm_fill_is_charged_to_the_run():
    # /dev/shm's own cap is set above the memory limit so that the cgroup is what stops it.
    sb = LocalSandbox(timeout_s=20, memory_mb=256, tmpfs_mb=4096)
    r, w = _watch(sb, SHM_FILL)
    assert r.status == "error" and "memory limit of 256 MB" in r.message, r
    assert w.peak_cgroup_memory <= 256 * MB
    assert w.peak_host_shm < 16 * MB  # the sandbox's /dev/shm is its own tmpfs, not the host's
    assert w.peak_rss_plus_shm < 300 * MB


@needs_bwrap
@pytest.mark.slow
def test_dev_shm_has_a_size_cap_without_cgroups():
    sb = LocalSandbox(timeout_s=20, memory_mb=256, cgroups=False, tmpfs_mb=64)
    r, w = _watch(sb, SHM_FILL)
    assert r.status == "ok" and r.stdout.startswith("stopped 28 "), r  # ENOSPC
    assert int(r.stdout.split()[2]) <= 64
    assert w.peak_host_shm < 16 * MB


@needs_bwrap
@needs_cgroups
@pytest.mark.slow
def test_many_processes_share_one_memory_bound():
    sb = LocalSandbox(timeout_s=20, memory_mb=256)
    r, w = _watch(sb, MANY_PROCESSES)
    assert w.peak_cgroup_memory <= 256 * MB
    # The outside sum reads one process after another while children are killed and replaced, so it can
    # add pages that never coexisted (348 MB seen once under a 256 MB cgroup). An escape from the bound
    # would show 12 x 180 MB = 2.1 GB; 512 MB still tells the two apart by 4x.
    assert w.peak_rss < 512 * MB
    assert r.status in ("ok", "error")


@needs_bwrap
@needs_cgroups
@pytest.mark.slow
@pytest.mark.skipif(shutil.which("gcc") is None, reason="no C compiler")
def test_compile_step_honours_memory_limit():
    sb = LocalSandbox(timeout_s=5, memory_mb=256)
    r, w = _watch(sb, COMPILE_BOMB, "cpp", compile_timeout_s=20)
    assert r.status == "compile_error", r
    assert w.peak_cgroup_memory <= 256 * MB
    assert w.peak_rss < 300 * MB
    assert sb.compile_timeout_s == 30.0  # the per-call value never lands on the shared sandbox


@needs_bwrap
@needs_cgroups
@pytest.mark.slow
def test_busy_processes_get_at_most_the_run_cpu_budget():
    sb = LocalSandbox(timeout_s=5, memory_mb=256)
    r, w = _watch(sb, BUSY_16)
    assert r.status == "timeout", r
    assert w.peak_processes <= sb.nproc
    # 16 spinning processes on every core for 5 s would use ~5 x cores CPU seconds; one core's
    # quota keeps the run at ~5 at most (less on a busy machine: the run competes as one group).
    assert 0 < w.cpu_seconds <= 5 * sb.cpus + 1.0, w.cpu_seconds


@needs_bwrap
@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="the work dir tmpfs needs root")
@pytest.mark.parametrize("cgroups", [True, False])
def test_5gb_write_stops_at_the_disk_cap(cgroups):
    if cgroups and not HAVE_CGROUPS:
        pytest.skip("no per-run cgroups here")
    sb = LocalSandbox(timeout_s=30, memory_mb=256, disk_mb=200, cgroups=cgroups)
    disk0 = _used(os.path.dirname(_uid_range_workdirs()[0]) if _uid_range_workdirs() else "/tmp")
    r, w = _watch(sb, DISK_5GB)
    assert w.peak_workdir <= 200 * MB
    assert _used("/tmp") - disk0 < 100 * MB  # nothing reached the host disk
    if r.status == "ok":  # stopped by the tmpfs cap (ENOSPC), not by the memory bound
        written = int(r.stdout.rsplit(" ", 1)[1])
        assert written <= 200, r.stdout


DENIED = {
    "user namespace": "ctypes.CDLL(None, use_errno=True).unshare(0x10000000)",
    "mount namespace": "ctypes.CDLL(None, use_errno=True).unshare(0x00020000)",
    "mount": "ctypes.CDLL(None, use_errno=True).mount(b'none', b'/tmp', b'tmpfs', 0, None)",
    "io_uring": "ctypes.CDLL(None, use_errno=True).syscall(425, 8, ctypes.create_string_buffer(120))",
    "ptrace": "ctypes.CDLL(None, use_errno=True).ptrace(0, 0, None, None)",
    "clone user ns": "ctypes.CDLL(None, use_errno=True).syscall(56, 0x10000000 | 17, 0, 0, 0, 0)",
    "bpf": "ctypes.CDLL(None, use_errno=True).syscall(321, 0, 0, 0)",
}


@needs_bwrap
@pytest.mark.parametrize("what", sorted(DENIED))
def test_dangerous_syscalls_are_refused(what):
    sb = LocalSandbox(timeout_s=5, memory_mb=256)
    code = f"import ctypes\nrc = {DENIED[what]}\nprint(rc, ctypes.get_errno())"
    r = sb.run(code)
    assert r.status == "ok", r
    rc, err = r.stdout.split()
    assert rc == "-1" and err == "1", f"{what}: {r.stdout}"  # EPERM


@needs_bwrap
def test_nested_sandbox_tools_fail():
    sb = LocalSandbox(timeout_s=5, memory_mb=256)
    r = sb.run("unshare -U true; echo $?; unshare -r true; echo $?", "bash")
    assert r.stdout.split() == ["1", "1"], r


def test_auto_without_bubblewrap_raises(monkeypatch):
    with pytest.raises(RuntimeError, match="isolation='none'") as err:
        LocalSandbox(bwrap="/nonexistent/bwrap")
    assert "\n" not in str(err.value)
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(RuntimeError, match="bubblewrap"):
        LocalSandbox()
    with pytest.raises(RuntimeError, match="bubblewrap"):
        LocalSandbox(isolation="bwrap")


def test_none_is_an_explicit_loud_opt_in(monkeypatch, caplog):
    monkeypatch.setattr(local, "_warned", set())
    with caplog.at_level(logging.WARNING, logger="tools.sandbox.local"):
        sb = LocalSandbox(isolation="none", timeout_s=5)
        LocalSandbox(isolation="none", timeout_s=5)
    warnings = [r.getMessage() for r in caplog.records if "NOT isolated" in r.getMessage()]
    assert len(warnings) == 1 and "/dev/shm" in warnings[0] and "loopback" in warnings[0]
    r = sb.run("print(6 * 7)")
    assert (r.status, r.stdout) == ("ok", "42\n")
    assert sb.limits_report()["isolation"].startswith("none")


@needs_bwrap
def test_bubblewrap_failure_is_a_sandbox_error():
    sb = LocalSandbox(timeout_s=5, python="/nonexistent/python3")
    r = sb.run("print(1)")
    assert r.status == "sandbox_error" and r.message.startswith("sandbox failed: bwrap:"), r
    r = LocalSandbox(timeout_s=5).run("print(1)", memory_mb=1)
    assert r.status == "sandbox_error" and "memory limit" in r.message


@needs_bwrap
def test_limits_report_says_what_holds():
    report = LocalSandbox(memory_mb=256).limits_report()
    assert set(report) == {"isolation", "memory", "processes", "cpu", "disk", "tmp", "hidden data"}
    assert "only the system's code dirs are mounted" in report["hidden data"]
    if HAVE_CGROUPS:
        assert "per run" in report["memory"] and "cgroup" in report["memory"]
    fallback = LocalSandbox(memory_mb=256, cgroups=False).limits_report()
    assert "no bound over the run" in fallback["memory"]


@needs_bwrap
@needs_cgroups
def test_run_groups_are_removed():
    sb = LocalSandbox(timeout_s=5, memory_mb=256)
    r = sb.run("import subprocess\nsubprocess.Popen(['sleep', '300'])\nprint('started')")
    assert r.stdout == "started\n"
    assert _uid_range_rss()[1] == 0  # killed before run() returned
    flush()  # the group's removal is housekeeping
    assert _run_groups(spares=False) == []
    # What is left are spare groups, each holding one root launcher that has exec'd nothing.
    for group in _run_groups():
        procs = _int_list(group.get("pids") or group["unified"], "cgroup.procs")
        assert len(procs) <= 1 and all(os.stat(f"/proc/{p}").st_uid == 0 for p in procs)
    discard_all()
    assert _run_groups() == []


def _int_list(directory: str, name: str) -> list[int]:
    with open(os.path.join(directory, name)) as fh:
        return [int(x) for x in fh.read().split()]
