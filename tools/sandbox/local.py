"""`LocalSandbox`: each run a fresh process under bubblewrap + seccomp, a private uid, a per-run cgroup and
rlimits."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import math
import os
import shutil
import signal
import sys
import threading
from functools import partial

from tools.sandbox.bwrap import SANDBOX_DIR, bwrap_argv, bwrap_problem, mounted_paths
from tools.sandbox.capped_run import run_capped
from tools.sandbox.cgroup import RunCgroup, sweep_stale
from tools.sandbox.cgroup import support as cgroup_support
from tools.sandbox.code_view import python_parts
from tools.sandbox.deferred import defer
from tools.sandbox.hidden import hidden_paths
from tools.sandbox.limits import IS_ROOT, Limits
from tools.sandbox.result import SandboxResult
from tools.sandbox.spares import Spare, SpareKind, replenish, take
from tools.sandbox.spawn import launcher_path
from tools.sandbox.uid_slot import UidSlot
from tools.sandbox.workdir import (
    make_workdir,
    read_files,
    remove_workdir,
    sweep_stale_workdirs,
    write_files,
)

log = logging.getLogger(__name__)

LANGUAGES = {
    "python": "python",
    "python3": "python",
    "py": "python",
    "bash": "bash",
    "sh": "bash",
    "shell": "bash",
    "c": "c",
    "cpp": "cpp",
    "c++": "cpp",
    "cxx": "cpp",
}
_SIGNAL_TEXT = {
    signal.SIGSEGV: "segmentation fault",
    signal.SIGXCPU: "CPU time limit exceeded",
    signal.SIGXFSZ: "file size limit exceeded",
    signal.SIGKILL: "killed",
    signal.SIGABRT: "aborted",
    signal.SIGFPE: "arithmetic error",
    signal.SIGBUS: "bus error",
    signal.SIGILL: "illegal instruction",
}
_warned: set[str] = set()
_pool: concurrent.futures.ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()
_in_flight = [0]  # runs of this process between start and end (how many spares are worth keeping)
_in_flight_lock = threading.Lock()


def _warn_once(key: str, message: str) -> None:
    if key not in _warned:
        _warned.add(key)
        log.warning(message)


_NONE_WARNING = (
    "LocalSandbox(isolation='none'): sandboxed code is NOT isolated: it can read every file {who} can "
    "read (turngym's hidden tests and repo-fix templates wherever turngym is installed, keys, other runs' "
    "files), write host /tmp and /dev/shm where later runs see it, "
    "and connect to the host network and to loopback TCP and unix sockets; no seccomp filter. Only "
    "rlimits, a private uid (as root), per-run cgroups and a capped work dir apply."
)
_swept: list[bool] = []
_swept_workdir_bases: set[str | None] = set()


def _who() -> str:
    return "a private unprivileged uid" if IS_ROOT else f"uid {os.getuid()}"


def _sweep_once() -> None:
    # Run groups of a process that was killed stay behind; clear them once per process.
    if not _swept:
        _swept.append(True)
        sweep_stale()


def _sweep_workdirs_once(base: str | None) -> None:
    # So do work dirs (mounted tmpfs, as root) whose teardown had not run yet: once per process and dir.
    if base not in _swept_workdir_bases:
        _swept_workdir_bases.add(base)
        sweep_stale_workdirs(base)


def _tear_down(group: RunCgroup | None, workdir: str | None, slot: UidSlot, emptied: bool) -> None:
    if group is not None:
        group.remove()
    if workdir is not None:
        remove_workdir(workdir)
    # Nothing leaves its cgroup without root, so an emptied group means no process of the uid is left:
    # the /proc sweep is only needed without one.
    slot.release(sweep=not emptied)


def _cancelled() -> SandboxResult:
    return SandboxResult("sandbox_error", message="cancelled by the caller; its processes were killed")


def default_python() -> str:
    """A Python an unprivileged uid can run: the system one if present, else this interpreter."""
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if os.access(candidate, os.X_OK):
            return candidate
    return os.path.realpath(sys.executable)


MIN_MEMORY_MB = 16  # below this neither bubblewrap nor an interpreter can start


class LocalSandbox:
    """Runs code in a fresh, isolated, resource-limited process per call.

    `isolation`: "auto" or "bwrap" (the same: bubblewrap namespaces with --disable-userns and a seccomp
    filter, required; a clear error if this machine cannot provide them) or "none" (an explicit opt-out:
    no namespaces or filter, said loudly in the log once per process).

    Limits hold for the whole run when cgroups are available (root, v1 or delegated v2): `memory_mb`
    bounds every process, tmpfs page and the compile step together, `nproc` the processes alive at once,
    `cpus` the cores it may use and `timeout_s * cpus` its CPU seconds. Without cgroups the rlimits
    (per process) and size-capped tmpfs (`disk_mb` work dir, `tmpfs_mb` /tmp and /dev/shm) remain;
    `limits_report()` says which hold.

    A bubblewrap run with cgroups starts from a spare when one is ready (`tools.sandbox.spares`: its
    fresh group and launcher made between calls), and its teardown runs after it returns, on the
    housekeeping thread (`tools.sandbox.deferred`); every process of the run is killed before it returns.

    Args:
        timeout_s: Wall-clock seconds one run may take (per call: `run(..., timeout_s=)`).
        memory_mb: Memory for the whole run (per process without cgroups); per call: `memory_mb=`.
        max_output_bytes: stdout and stderr are each cut at this size (`SandboxResult.truncated`).
        nproc: Processes alive at once (with cgroups or a dropped uid).
        fsize_mb: Largest file a process may write.
        nofile: Open file descriptors per process.
        isolation: "auto", "bwrap" or "none", as above.
        python: The interpreter that runs Python code; default: a system Python outside this install.
        compile_timeout_s: Seconds the C/C++ compile step may take, on top of `timeout_s`.
        workdir_base: Where the per-run work dirs are made; default: the system temp dir.
        max_workers: Threads `arun` runs sandboxes on (shared by every sandbox in the process).
        bwrap: Path of the bubblewrap binary; default: the one on PATH.
        cgroups: False skips per-run cgroups even where they are available.
        cpus: Cores one run may use (with cgroups).
        disk_mb: Size of the work dir's tmpfs (as root).
        tmpfs_mb: Size of /tmp and /dev/shm inside the sandbox.

    Raises:
        RuntimeError: `isolation` is "auto"/"bwrap" and this machine cannot isolate (the message says
            what to install, or to pass isolation="none").
        ValueError: `isolation` is not one of the three names.

    Example:
        >>> from tools.sandbox import LocalSandbox
        >>> sandbox = LocalSandbox(timeout_s=5)
        >>> sandbox.isolation
        'bwrap'
        >>> result = sandbox.run("print(sum(range(10)))")
        >>> result.status, result.stdout
        ('ok', '45\\n')
        >>> sandbox.run("open('/etc/passwd', 'a')").status
        'error'
        >>> slow = sandbox.run("while True: pass", timeout_s=0.5)
        >>> slow.status, slow.message
        ('timeout', 'timed out after 0.5s (wall clock); process killed')
    """

    def __init__(
        self,
        *,
        timeout_s: float = 10.0,
        memory_mb: int = 512,
        max_output_bytes: int = 1 << 20,
        nproc: int = 64,
        fsize_mb: int = 64,
        nofile: int = 256,
        isolation: str = "auto",
        python: str | None = None,
        compile_timeout_s: float = 30.0,
        workdir_base: str | None = None,
        max_workers: int = 64,
        bwrap: str | None = None,
        cgroups: bool = True,
        cpus: float = 1.0,
        disk_mb: int = 256,
        tmpfs_mb: int = 128,
    ) -> None:
        self.timeout_s = timeout_s
        self.memory_mb = memory_mb
        self.max_output_bytes = max_output_bytes
        self.nproc, self.fsize_mb, self.nofile = nproc, fsize_mb, nofile
        self.python = python or default_python()
        self.compile_timeout_s = compile_timeout_s
        self.workdir_base = workdir_base
        self.max_workers = max_workers
        self.cpus, self.disk_mb, self.tmpfs_mb = cpus, disk_mb, tmpfs_mb
        self.bwrap: str | None = None
        if isolation not in ("auto", "bwrap", "none"):
            raise ValueError(f"isolation must be 'auto', 'bwrap' or 'none', got {isolation!r}")
        if isolation == "none":
            _warn_once("isolation-none", _NONE_WARNING.format(who=_who()))
        else:
            exe = bwrap or shutil.which("bwrap")
            problem = bwrap_problem(exe) if exe else "bubblewrap (bwrap) is not installed"
            if problem:
                raise RuntimeError(
                    f"sandbox isolation unavailable: {problem}. Install it (Debian: apt-get install "
                    "bubblewrap libseccomp2; pip install pyseccomp) or pass isolation='none' to run code "
                    "without isolation."
                )
            self.bwrap = exe
        if not IS_ROOT:
            _warn_once(
                "not-root",
                "not running as root: sandboxed code keeps this user's uid (no process-count limit, "
                "no per-run cgroup, work dir not size-capped)",
            )
        self._cgroups = cgroup_support() if cgroups else None
        if self._cgroups is not None and not self._cgroups.available:
            _warn_once(
                "no-cgroups",
                f"sandbox: no per-run cgroups ({self._cgroups.reason}); memory and CPU limits hold per "
                "process only (rlimits), tmpfs sizes are capped",
            )
            self._cgroups = None
        if self._cgroups is not None:
            _sweep_once()
        _sweep_workdirs_once(workdir_base)
        real = os.path.realpath(self.python)
        # Its executable, standard library and libpython: what `-I -S` reads (`code_view`).
        self._extra_ro = python_parts(real)
        if self.bwrap:
            self._check_masks(real)

    def _check_masks(self, python: str) -> None:
        # The masks come first: a sandbox Python whose own tree holds turngym's secrets cannot run, and
        # running it unmasked would show them. Refuse in one line rather than weaken either.
        covered = self._hidden()
        inside = [d for d in covered.dirs if python.startswith(d + os.sep)]
        if inside:
            raise RuntimeError(
                f"sandbox python {python} lies inside {inside[0]}, which holds turngym's hidden data and is "
                "hidden from sandboxes; pass python= an interpreter outside it (e.g. /usr/bin/python3)"
            )

    def _hidden(self):
        return hidden_paths(tuple(mounted_paths(self._extra_ro)))

    @property
    def isolation(self) -> str:
        """ "bwrap" or "none" (rlimits and uid drop only)."""
        return "bwrap" if self.bwrap else "none"

    def limits_report(self) -> dict[str, str]:
        """Which limits hold for a run here, one sentence per resource (for logs, /health and docs)."""
        cg = self._cgroups
        how = f"cgroup v{cg.version}" if cg else ""
        report = {
            "isolation": (
                f"bubblewrap ({self.bwrap}): own mount, pid, net, ipc, uts, user namespaces; nested user "
                "namespaces disabled; seccomp filter refuses mount, unshare/setns, ptrace, io_uring, bpf, "
                "keyctl, perf_event_open, module and kexec calls"
                if self.bwrap
                else "none: code can read any file its uid can, reach the host network and loopback, "
                "and share host /tmp and /dev/shm"
            ),
            "memory": (
                f"{self.memory_mb} MB per run over all its processes, tmpfs pages and the compile step "
                f"({how}, swap excluded); plus {self.memory_mb} MB address space per process"
                if cg
                else f"{self.memory_mb} MB address space per process (RLIMIT_AS); no bound over the run"
            ),
            "processes": (
                f"{self.nproc} alive at once per run ({how} pids)"
                if cg
                else f"{self.nproc} per private uid (RLIMIT_NPROC)"
                if IS_ROOT
                else "not bounded (not root: RLIMIT_NPROC would count this user's own processes)"
            ),
            "cpu": (
                f"{self.cpus:g} core(s) per run ({how} quota) and at most timeout x {self.cpus:g} CPU "
                "seconds (killed past it); plus RLIMIT_CPU per process"
                if cg
                else "RLIMIT_CPU per process (timeout + 1 s); a run with many processes can use every core "
                "until the wall-clock timeout"
            ),
            "disk": (
                f"work dir: tmpfs capped at {self.disk_mb} MB ({self._workdir_note()}); files at most "
                f"{self.fsize_mb} MB each"
                if IS_ROOT
                else f"work dir on disk, files at most {self.fsize_mb} MB each (RLIMIT_FSIZE), total "
                "not bounded (not root: no tmpfs mount)"
            ),
            "hidden data": self._hidden_note(),
            "tmp": (
                f"/tmp and /dev/shm: private tmpfs capped at {self.tmpfs_mb} MB each"
                + (" (and counted in the run's memory)" if cg else "")
                if self.bwrap
                else "/tmp and /dev/shm are the host's (isolation='none')"
            ),
        }
        return report

    def _hidden_note(self) -> str:
        if not self.bwrap:
            return (
                "NOT hidden (isolation='none'): code reads every file its uid can, turngym's hidden tests "
                "and templates included; do not grade with it"
            )
        found = self._hidden()
        return (
            f"only the system's code dirs are mounted ({', '.join(found.roots)}); inside them "
            f"{len(found.dirs)} package or turngym dirs and {len(found.files)} archives or copies of "
            "hidden files are covered"
        )

    def _workdir_note(self) -> str:
        return "counted in the run's memory" if self._cgroups else "RAM, outside any per-run bound"

    def _command(self, argv: list[str], workdir: str) -> tuple[list[str], str]:
        if self.bwrap:
            command = bwrap_argv(
                self.bwrap, workdir, argv, self._extra_ro, tmp_mb=self.tmpfs_mb, shm_mb=self.tmpfs_mb
            )
            return command, workdir
        return argv, workdir

    def _run_cgroup(self, memory: int, uid: int | None) -> RunCgroup | None:
        if self._cgroups is None:
            return None
        return RunCgroup(memory, self.nproc, self.cpus, tag=str(uid if uid is not None else "self"))

    def _spare_kind(self, memory: int) -> SpareKind | None:
        """The spare a run with this memory bound can use: bwrap with cgroups and the C launcher only."""
        if self._cgroups is None or not self.bwrap or launcher_path() is None:
            return None
        # Only bwrap runs' environment is the same for every run (HOME and TMPDIR are inside).
        env = tuple(sorted(self._env(SANDBOX_DIR).items()))
        return SpareKind(memory, self.nproc, self.cpus, env)

    def _workdir_size_mb(self) -> int | None:
        return self.disk_mb if IS_ROOT else None

    def _env(self, workdir: str) -> dict[str, str]:
        home = SANDBOX_DIR if self.bwrap else workdir
        return {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": home,
            "TMPDIR": "/tmp" if self.bwrap else workdir,
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1",
        }

    def run(
        self,
        code: str,
        language: str = "python",
        *,
        timeout_s: float | None = None,
        memory_mb: int | None = None,
        stdin: str | bytes | None = None,
        files: dict[str, str | bytes] | None = None,
        fetch_files: list[str] | None = None,
        compile_timeout_s: float | None = None,
        cancel: threading.Event | None = None,
    ) -> SandboxResult:
        """Run `code` once in a fresh sandbox; never raises for anything the code does.

        Args:
            code: The program's source.
            language: "python", "bash", "c" or "cpp" (and their aliases: "py", "sh", "c++", ...).
            timeout_s: This run's wall-clock limit instead of the instance's.
            memory_mb: This run's memory limit instead of the instance's.
            stdin: What the program reads on standard input.
            files: Files to put in the work dir first, by relative path.
            fetch_files: Relative paths to read back from the work dir after the run.
            compile_timeout_s: Overrides the instance's compile limit for this call only.
            cancel: Setting it stops the run (its processes are killed) and returns a sandbox_error
                saying so.

        Returns:
            The run's `SandboxResult`: status, output, exit code, duration, one-sentence message and
            the fetched files. A failure of the sandbox itself is status "sandbox_error", not an
            exception.
        """
        lang = LANGUAGES.get(language.lower())
        if lang is None:
            return SandboxResult(
                "sandbox_error",
                message=f"unsupported language {language!r}; supported: {', '.join(sorted(set(LANGUAGES.values())))}",
            )
        timeout = float(timeout_s if timeout_s is not None else self.timeout_s)
        memory = int(memory_mb if memory_mb is not None else self.memory_mb)
        compile_timeout = float(
            compile_timeout_s if compile_timeout_s is not None else self.compile_timeout_s
        )
        if cancel is not None and cancel.is_set():
            return _cancelled()
        if memory < MIN_MEMORY_MB:
            return SandboxResult(
                "sandbox_error",
                message=f"memory limit of {memory} MB is below the {MIN_MEMORY_MB} MB a sandboxed run needs",
            )
        try:
            slot = UidSlot()
        except RuntimeError as exc:
            return SandboxResult("sandbox_error", message=str(exc))
        workdir = None
        group: RunCgroup | None = None
        emptied = False
        kind = self._spare_kind(memory)
        spare: Spare | None = take(kind) if kind is not None else None
        with _in_flight_lock:
            _in_flight[0] += 1
        try:
            group = spare.group if spare is not None else self._run_cgroup(memory, slot.uid)
            workdir = make_workdir(slot.uid, self.workdir_base, self._workdir_size_mb())
            return self._run_in(
                lang,
                code,
                workdir,
                slot.uid,
                timeout,
                memory,
                stdin,
                files or {},
                fetch_files or [],
                compile_timeout,
                cancel,
                group,
                spare,
            )
        except Exception as exc:  # our own failure, not the code's
            return SandboxResult("sandbox_error", message=f"sandbox failed: {type(exc).__name__}: {exc}")
        finally:
            if spare is not None and not spare.launcher.used:
                spare.launcher.discard()
            if group is not None:
                emptied = group.kill_all()
            # Every process of the run is dead by now (its group emptied, or without one its uid swept
            # in run_capped). Removing the group and unmounting the work dir wait on RCU grace periods:
            # they happen on the housekeeping thread, and the uid is freed only after them.
            defer(partial(_tear_down, group, workdir, slot, emptied))
            with _in_flight_lock:
                in_flight = _in_flight[0]
                _in_flight[0] -= 1
            if kind is not None:
                # Made on the housekeeping thread while the caller reads this result.
                replenish(kind, launcher_path(), in_flight)

    def _run_in(
        self,
        lang,
        code,
        workdir,
        uid,
        timeout,
        memory,
        stdin,
        files,
        fetch,
        compile_timeout,
        cancel=None,
        group=None,
        spare=None,
    ) -> SandboxResult:
        # The spare's launcher starts the first command (compiler or program); a second one starts anew.
        parked = spare.launcher if spare is not None else None
        source = {"python": "main.py", "bash": "main.sh", "c": "main.c", "cpp": "main.cpp"}[lang]
        write_files(workdir, {**files, source: code}, uid)
        stdin_bytes = stdin.encode() if isinstance(stdin, str) else stdin
        here = SANDBOX_DIR if self.bwrap else workdir
        compile_output = ""
        if lang in ("c", "cpp"):
            compiler = shutil.which("gcc" if lang == "c" else "g++")
            if compiler is None:
                return SandboxResult(
                    "sandbox_error", message=f"no {'gcc' if lang == 'c' else 'g++'} on this machine"
                )
            flags = ["-O2", "-std=c11"] if lang == "c" else ["-O2", "-std=c++17"]
            argv = [compiler, *flags, "-o", f"{here}/main", f"{here}/{source}", "-lm"]
            # cc1plus reserves far more address space than it touches: with a cgroup the run's memory
            # bound (which covers the compiler) is the real limit, so RLIMIT_AS stays generous for it.
            address_space = max(memory, 4096) if group is not None else memory
            built = self._exec(
                argv, workdir, uid, None, compile_timeout, address_space, cancel, group, parked
            )
            parked = None
            if built.cancelled:
                return _cancelled()
            failure = self._tool_failure(built)
            if failure is not None:
                return failure
            compile_output = (built.stdout + built.stderr).decode(errors="replace")
            if built.timed_out or built.returncode != 0:
                why = (
                    "compile timed out"
                    if built.timed_out
                    else self._memory_text(group, memory, "compiler")
                    or f"compilation failed (exit code {built.returncode})"
                )
                return SandboxResult(
                    "compile_error",
                    exit_code=built.returncode,
                    duration_s=built.duration_s,
                    message=why,
                    compile_output=compile_output,
                )
            argv = [f"{here}/main"]
        elif lang == "python":
            argv = [self.python, "-I", "-S", "-u", f"{here}/{source}"]
        else:
            argv = ["/bin/bash", f"{here}/{source}"]
        raw = self._exec(argv, workdir, uid, stdin_bytes, timeout, memory, cancel, group, parked)
        if raw.cancelled:
            return _cancelled()
        failure = self._tool_failure(raw)
        if failure is not None:
            return failure
        result = SandboxResult(
            status="ok",
            stdout=raw.stdout.decode(errors="replace"),
            stderr=raw.stderr.decode(errors="replace"),
            exit_code=raw.returncode,
            duration_s=raw.duration_s,
            truncated=raw.truncated,
            compile_output=compile_output,
        )
        if raw.cpu_exceeded:
            result.status, result.message = (
                "timeout",
                f"timed out: used more than {timeout * self.cpus:g} CPU seconds "
                f"({timeout:g}s x {self.cpus:g} core); every process killed",
            )
        elif raw.timed_out:
            result.status, result.message = (
                "timeout",
                f"timed out after {timeout:g}s (wall clock); process killed",
            )
        elif raw.returncode != 0:
            result.status = "error"
            result.message = self._memory_text(group, memory, "program") or self._exit_text(raw.returncode)
        if raw.truncated:
            result.message = (result.message + "; " if result.message else "") + (
                f"output over {self.max_output_bytes} bytes was cut"
            )
        if fetch:
            result.files = read_files(workdir, fetch, self.max_output_bytes)
        return result

    def _exec(self, argv, workdir, uid, stdin, timeout, memory, cancel=None, group=None, parked=None):
        command, cwd = self._command(argv, workdir)
        limits = Limits(
            cpu_s=math.ceil(timeout) + 1,
            memory_mb=memory,
            nproc=self.nproc,
            fsize_mb=self.fsize_mb,
            nofile=self.nofile,
        )
        return run_capped(
            command,
            cwd=cwd,
            env=self._env(workdir),
            stdin=stdin,
            timeout_s=timeout,
            max_output_bytes=self.max_output_bytes,
            limits=limits,
            uid=uid,
            cancel=cancel,
            cgroup_procs=group.procs_files if group is not None else (),
            cpu_seconds=group.cpu_seconds if group is not None else None,
            cpu_budget_s=timeout * self.cpus if group is not None else math.inf,
            parked=parked,
            kill_rest=group.kill_all if group is not None else None,
        )

    @staticmethod
    def _tool_failure(raw) -> SandboxResult | None:
        """bubblewrap's or the launcher's own failure (before the code ran) as a sandbox_error."""
        err = raw.stderr
        if raw.timed_out or raw.cancelled or raw.stdout:
            return None
        if (raw.returncode == 1 and err.startswith(b"bwrap: ")) or (
            raw.returncode == 126 and err.startswith(b"sandbox launcher: ")
        ):
            line = err.decode(errors="replace").strip().splitlines()[0]
            return SandboxResult(
                "sandbox_error", duration_s=raw.duration_s, message=f"sandbox failed: {line}"
            )
        return None

    @staticmethod
    def _memory_text(group: RunCgroup | None, memory: int, what: str) -> str:
        if group is not None and group.oom_kills():
            return (
                f"killed: the {what} went over the run's memory limit of {memory} MB "
                "(all its processes and temporary files together)"
            )
        return ""

    def _exit_text(self, code: int | None) -> str:
        sig = None
        if code is not None and code < 0:
            sig = -code
        elif self.bwrap and code is not None and 128 < code < 128 + 32:
            sig = code - 128  # bubblewrap reports a signalled child as 128 + signal
        if sig is not None:
            try:
                name = signal.Signals(sig).name
            except ValueError:
                name = f"signal {sig}"
            return f"killed by {name} ({_SIGNAL_TEXT.get(sig, 'signal')})"
        return f"exited with code {code}"

    async def arun(self, code: str, language: str = "python", **kwargs) -> SandboxResult:
        """Async twin of `run` (runs in a worker thread so the event loop never blocks).

        Args:
            code: The program's source.
            language: As for `run`.
            **kwargs: `run`'s other options; cancelling the await stops the run's processes too.

        Returns:
            The run's `SandboxResult`, as `run` returns it.
        """
        global _pool
        with _pool_lock:
            if _pool is None:
                _pool = concurrent.futures.ThreadPoolExecutor(self.max_workers, thread_name_prefix="sandbox")
        loop = asyncio.get_running_loop()
        # A cancelled await (tool time budget, server disconnect, rollout shutdown) must stop the
        # process tree too, not leave it running in the pool until its own timeout.
        cancel = kwargs.pop("cancel", None) or threading.Event()
        future = loop.run_in_executor(_pool, lambda: self.run(code, language, cancel=cancel, **kwargs))
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            cancel.set()
            raise
