"""Process isolation primitives: uid slots, rlimits, bubblewrap command lines, tmpfs work dirs, a capped run
loop, cleanup."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import math
import os
import resource
import selectors
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

IS_ROOT = os.geteuid() == 0
SANDBOX_DIR = "/sandbox"  # where the private work dir appears inside bubblewrap

# Host paths bound read-only into the sandbox (when they exist). /etc is not bound whole: only what
# loaders and compilers read.
_RO_PATHS = (
    "/usr",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/alternatives",
    "/etc/localtime",
)
_TOP_LINKS = ("/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32")


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


_LAUNCHER_SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "launcher.c")
_launcher: list[str | None] = []
_launcher_lock = threading.Lock()


def launcher_path() -> str | None:
    """The compiled exec helper (built once with the C compiler, cached in a root-only dir), or None."""
    with _launcher_lock:
        if _launcher:
            return _launcher[0]
        _launcher.append(_build_launcher())
        return _launcher[0]


def _build_launcher() -> str | None:
    if os.environ.get("TURNGYM_SANDBOX_NO_LAUNCHER"):
        return None
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None or not os.path.exists(_LAUNCHER_SRC):
        return None
    import hashlib

    with open(_LAUNCHER_SRC, "rb") as fh:
        digest = hashlib.sha256(fh.read()).hexdigest()[:16]
    cache = os.path.join(tempfile.gettempdir(), f"turngym-sandbox-{os.geteuid()}")
    os.makedirs(cache, mode=0o700, exist_ok=True)
    st = os.stat(cache)
    if st.st_uid != os.geteuid() or st.st_mode & 0o022:
        return None  # someone else could swap the binary we would run as root
    target = os.path.join(cache, f"launcher-{digest}")
    if os.path.exists(target):
        return target
    tmp = f"{target}.{os.getpid()}.tmp"
    try:
        done = subprocess.run([cc, "-O2", "-o", tmp, _LAUNCHER_SRC], capture_output=True, timeout=60)
        if done.returncode != 0:
            return None
        os.chmod(tmp, 0o700)
        os.replace(tmp, target)
        return target
    except (OSError, subprocess.SubprocessError):
        return None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


# bwrap_argv puts this where the seccomp program's fd number goes; spawn() opens a fresh fd per run (bwrap
# reads it to EOF) and writes its number in.
SECCOMP_FD_SLOT = "@seccomp-fd@"


def spawn(
    argv: list[str],
    *,
    cwd: str,
    env: dict[str, str],
    limits: Limits,
    uid: int | None,
    stdin: int,
    stdout: int,
    stderr: int,
    cgroup_procs: tuple[str, ...] = (),
) -> subprocess.Popen:
    """Start `argv` in a new session, inside the given cgroups, with rlimits and, as root, the private uid.

    Uses the small C launcher when it could be built (Python then spawns with vfork); otherwise a
    preexec function (forces a full fork of this process: a few ms slower).
    """
    pass_fds: tuple[int, ...] = ()
    if SECCOMP_FD_SLOT in argv:
        from tools.sandbox.seccomp import program_fd

        fd = program_fd()
        pass_fds = (fd,)
        argv = [str(fd) if a == SECCOMP_FD_SLOT else a for a in argv]
    if any(":" in p for p in cgroup_procs):
        raise ValueError(f"cgroup paths must not contain ':': {cgroup_procs}")
    try:
        launcher = launcher_path()
        if launcher is not None:
            values = dict(limits.rlimits())
            command = [
                launcher,
                str(uid if uid is not None else -1),
                str(values[resource.RLIMIT_CPU]),
                str(values.get(resource.RLIMIT_AS, 0)),
                str(values.get(resource.RLIMIT_NPROC, 0)),
                str(values[resource.RLIMIT_FSIZE]),
                str(values[resource.RLIMIT_NOFILE]),
                ":".join(cgroup_procs) or "-",
                "--",
                *argv,
            ]
            return subprocess.Popen(
                command,
                stdin=stdin,
                stdout=stdout,
                stderr=stderr,
                cwd=cwd,
                env=env,
                start_new_session=True,
                pass_fds=pass_fds,
            )
        return subprocess.Popen(
            argv,
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            cwd=cwd,
            env=env,
            start_new_session=True,
            pass_fds=pass_fds,
            preexec_fn=limiter(limits, uid, cgroup_procs),
        )
    finally:
        for fd in pass_fds:
            os.close(fd)


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


def make_workdir(uid: int | None, base: str | None = None, size_mb: int | None = None) -> str:
    """A private temp dir owned by `uid`; with `size_mb` (root only) a tmpfs of that size, so what the
    code writes there is bounded in total, not only per file."""
    path = tempfile.mkdtemp(prefix="turngym-sbx-", dir=base)
    if size_mb is not None:
        try:
            mount_tmpfs(path, size_mb, uid)
        except OSError:
            os.rmdir(path)
            raise
    if uid is not None:
        os.chown(path, uid, uid)
    os.chmod(path, 0o700)
    return path


_MS_NOSUID, _MS_NODEV, _MNT_DETACH = 2, 4, 2
_libc = []


def _libc_fn(name: str):
    if not _libc:
        import ctypes

        _libc.append(ctypes.CDLL(None, use_errno=True))
    return getattr(_libc[0], name)


def mount_tmpfs(path: str, size_mb: int, uid: int | None) -> None:
    """Mount a size- and inode-capped tmpfs on `path` (needs root)."""
    import ctypes

    owner = f",uid={uid},gid={uid}" if uid is not None else ""
    options = f"size={int(size_mb)}m,nr_inodes=16384,mode=0700{owner}".encode()
    if _libc_fn("mount")(b"tmpfs", path.encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV, options) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mounting a tmpfs on {path}: {os.strerror(err)}")


def remove_workdir(path: str) -> None:
    """Delete the work dir (unmounting its tmpfs first), including read-only dirs the code may have made."""
    if os.path.ismount(path) and _libc_fn("umount2")(path.encode(), _MNT_DETACH) == 0:
        os.rmdir(path)
        return

    def fix(func, p, _exc):
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(p), 0o700)
            os.chmod(p, 0o700)
            func(p)

    shutil.rmtree(path, onerror=fix)


def write_files(workdir: str, files: dict[str, str | bytes], uid: int | None) -> None:
    """Put input files under the work dir; paths must stay inside it."""
    root = os.path.realpath(workdir)
    for rel, data in files.items():
        target = os.path.realpath(os.path.join(root, rel.lstrip("/")))
        if os.path.commonpath([root, target]) != root:
            raise ValueError(f"file path {rel!r} leaves the sandbox directory")
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as fh:
            fh.write(data.encode() if isinstance(data, str) else data)
        if uid is not None:
            os.chown(target, uid, uid)
            d = os.path.dirname(target)
            while d != root and d.startswith(root):
                os.chown(d, uid, uid)
                d = os.path.dirname(d)


def read_files(workdir: str, paths: list[str], limit_bytes: int) -> dict[str, bytes]:
    """Fetch files the code wrote (missing ones are skipped; symlinks out of the dir refused)."""
    root = os.path.realpath(workdir)
    out: dict[str, bytes] = {}
    for rel in paths:
        target = os.path.realpath(os.path.join(root, rel.lstrip("/").removeprefix("sandbox/")))
        if os.path.commonpath([root, target]) != root or not os.path.isfile(target):
            continue
        with open(target, "rb") as fh:
            out[rel] = fh.read(limit_bytes)
    return out


_bwrap_probe: dict[str, str] = {}
_probe_lock = threading.Lock()


def bwrap_problem(exe: str | None = None) -> str:
    """Why bubblewrap cannot give full isolation here (empty when it can): missing, too old for
    --disable-userns, or unable to create namespaces / load the seccomp filter (checked once per path)."""
    exe = exe or shutil.which("bwrap")
    if exe is None:
        return "bubblewrap (bwrap) is not installed"
    if not os.access(exe, os.X_OK):
        return f"bubblewrap not found at {exe}"
    from tools.sandbox.seccomp import unavailable_reason

    reason = unavailable_reason()
    if reason:
        return reason
    with _probe_lock:
        if exe not in _bwrap_probe:
            _bwrap_probe[exe] = _probe(exe)
        return _bwrap_probe[exe]


def _probe(exe: str) -> str:
    probe = bwrap_argv(exe, "/tmp", ["/bin/true"], bind_workdir=False)
    try:
        proc = spawn(
            probe,
            cwd="/",
            env={"PATH": "/usr/bin:/bin"},
            limits=Limits(cpu_s=10, memory_mb=0),
            uid=65534 if IS_ROOT else None,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        _, err = proc.communicate(timeout=10)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"bubblewrap at {exe} could not start: {exc}"
    if proc.returncode != 0:
        text = err.decode(errors="replace").strip().splitlines()
        return f"bubblewrap at {exe} cannot create the sandbox: {text[-1] if text else proc.returncode}"
    return ""


def bwrap_path(exe: str | None = None) -> str | None:
    """bubblewrap's path if it is installed and gives full isolation here (checked once), else None."""
    exe = exe or shutil.which("bwrap")
    return exe if exe and not bwrap_problem(exe) else None


def bwrap_argv(
    exe: str,
    workdir: str,
    command: list[str],
    extra_ro: tuple[str, ...] = (),
    bind_workdir: bool = True,
    *,
    tmp_mb: int = 256,
    shm_mb: int = 64,
    hardened: bool = True,
) -> list[str]:
    """bubblewrap command: no network, read-only system, size-capped private /tmp and /dev/shm, the work
    dir, own PID namespace; `hardened` adds --disable-userns and the seccomp filter (the default)."""
    argv = [exe, "--unshare-all", "--die-with-parent", "--new-session"]
    if hardened:
        # --unshare-all only *tries* a user namespace; --disable-userns needs one for sure.
        argv += ["--unshare-user", "--disable-userns", "--seccomp", SECCOMP_FD_SLOT]
    for path in (*_RO_PATHS, *extra_ro):
        if os.path.exists(path):
            argv += ["--ro-bind", path, path]
    for path in _TOP_LINKS:
        if os.path.islink(path):
            argv += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            argv += ["--ro-bind", path, path]
    argv += ["--proc", "/proc", "--dev", "/dev", "--size", str(tmp_mb * 1024 * 1024), "--tmpfs", "/tmp"]
    # --dev's own /dev/shm is a tmpfs of half the host's RAM: replace it with a capped one.
    argv += ["--size", str(shm_mb * 1024 * 1024), "--tmpfs", "/dev/shm"]
    if bind_workdir:
        argv += ["--bind", workdir, SANDBOX_DIR, "--chdir", SANDBOX_DIR]
    argv += ["--remount-ro", "/", "--", *command]
    return argv


_CPU_CHECK_S = 0.2


@dataclass
class RawRun:
    """Bytes and exit facts of one process tree."""

    returncode: int | None
    stdout: bytes
    stderr: bytes
    timed_out: bool
    truncated: bool
    duration_s: float
    cpu_exceeded: bool = False  # killed for going over the CPU-seconds budget (cgroup accounting)
    cancelled: bool = False  # stopped because the caller's `cancel` event was set


def run_capped(
    argv: list[str],
    *,
    cwd: str,
    env: dict[str, str],
    stdin: bytes | None,
    timeout_s: float,
    max_output_bytes: int,
    limits: Limits,
    uid: int | None,
    cancel: threading.Event | None = None,
    cgroup_procs: tuple[str, ...] = (),
    cpu_seconds: Callable[[], float] | None = None,
    cpu_budget_s: float = math.inf,
) -> RawRun:
    """Run to completion, wall timeout or `cancel`; kill the whole group either way; cap each stream.

    With `cpu_seconds` (the run's cgroup CPU counter) the run also ends, as a timeout, once it has used
    more than `cpu_budget_s` CPU seconds since it started (checked every 0.2 s).
    """
    start = time.perf_counter()
    proc = spawn(
        argv,
        cwd=cwd,
        env=env,
        limits=limits,
        uid=uid,
        stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cgroup_procs=cgroup_procs,
    )
    cpu_start = cpu_seconds() if cpu_seconds is not None else 0.0
    next_cpu_check = start + _CPU_CHECK_S
    cpu_exceeded = False
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
    bufs = {out_fd: bytearray(), err_fd: bytearray()}
    truncated = False
    timed_out = False
    cancelled = False
    sel = selectors.DefaultSelector()
    for fd in bufs:
        os.set_blocking(fd, False)
        sel.register(fd, selectors.EVENT_READ)
    pidfd = os.pidfd_open(proc.pid)
    sel.register(pidfd, selectors.EVENT_READ)
    pending = memoryview(stdin) if stdin else None
    if pending is not None:
        os.set_blocking(proc.stdin.fileno(), False)
        sel.register(proc.stdin.fileno(), selectors.EVENT_WRITE)
    deadline = start + timeout_s
    exited_at: float | None = None
    open_fds = set(bufs)
    try:
        while open_fds:
            now = time.perf_counter()
            if exited_at is not None and now - exited_at > 0.05:
                break  # main process gone; what still holds the pipes is a left-behind child
            if now >= deadline:
                timed_out = True
                break
            if cancel is not None and cancel.is_set():
                cancelled = True
                break
            if cpu_seconds is not None and now >= next_cpu_check:
                next_cpu_check = now + _CPU_CHECK_S
                if cpu_seconds() - cpu_start > cpu_budget_s:
                    timed_out = cpu_exceeded = True
                    break
            wait = deadline - now if exited_at is None else 0.05
            if cancel is not None:
                wait = min(wait, 0.05)  # an Event cannot wake select(): poll it (cancel within 50 ms)
            if cpu_seconds is not None:
                wait = min(wait, max(next_cpu_check - now, 0.0))
            for key, _ in sel.select(wait):
                fd = key.fd
                if fd == pidfd:
                    sel.unregister(pidfd)
                    exited_at = time.perf_counter()
                elif pending is not None and fd == proc.stdin.fileno():
                    try:
                        n = os.write(fd, pending[:65536])
                        pending = pending[n:]
                    except BrokenPipeError:
                        pending = pending[:0]
                    if not pending:
                        sel.unregister(fd)
                        proc.stdin.close()
                        pending = None
                else:
                    try:
                        chunk = os.read(fd, 1 << 16)
                    except BlockingIOError:
                        continue
                    if not chunk:
                        sel.unregister(fd)
                        open_fds.discard(fd)
                        continue
                    buf = bufs[fd]
                    room = max_output_bytes - len(buf)
                    if len(chunk) > room:
                        truncated = True
                        chunk = chunk[: max(room, 0)]
                    buf += chunk
    finally:
        kill_group(proc.pid)
        proc.wait()  # SIGKILLed or already exited: returns at once
        # Always sweep the private uid: a PID namespace's teardown is not finished when bwrap is reaped,
        # and without bwrap a daemon may have left the process group.
        if uid is not None:
            kill_uid(uid)
        sel.close()
        os.close(pidfd)
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
    return RawRun(
        returncode=None if timed_out or cancelled else proc.returncode,
        stdout=bytes(bufs[out_fd]),
        stderr=bytes(bufs[err_fd]),
        timed_out=timed_out,
        truncated=truncated,
        duration_s=time.perf_counter() - start,
        cancelled=cancelled,
        cpu_exceeded=cpu_exceeded,
    )


def kill_group(pgid: int) -> None:
    """SIGKILL a process group, ignoring one that is already gone."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError as exc:
        if exc.errno not in (errno.ESRCH, errno.EPERM):
            raise
