"""`LocalSandbox`: each run a fresh process under bubblewrap (when present), a private uid and rlimits."""

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

from tools.sandbox.isolation import (
    IS_ROOT,
    SANDBOX_DIR,
    Limits,
    UidSlot,
    bwrap_argv,
    bwrap_path,
    make_workdir,
    read_files,
    remove_workdir,
    run_capped,
    write_files,
)
from tools.sandbox.result import SandboxResult

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


def _warn_once(key: str, message: str) -> None:
    if key not in _warned:
        _warned.add(key)
        log.warning(message)


def _cancelled() -> SandboxResult:
    return SandboxResult("sandbox_error", message="cancelled by the caller; its processes were killed")


def default_python() -> str:
    """A Python an unprivileged uid can run: the system one if present, else this interpreter."""
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if os.access(candidate, os.X_OK):
            return candidate
    return os.path.realpath(sys.executable)


class LocalSandbox:
    """Runs code in a fresh, isolated, resource-limited process per call.

    `isolation`: "auto" (bubblewrap when it works here, else rlimits only, said once in the log),
    "bwrap" (required) or "none" (rlimits and uid drop only).
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
    ) -> None:
        self.timeout_s = timeout_s
        self.memory_mb = memory_mb
        self.max_output_bytes = max_output_bytes
        self.nproc, self.fsize_mb, self.nofile = nproc, fsize_mb, nofile
        self.python = python or default_python()
        self.compile_timeout_s = compile_timeout_s
        self.workdir_base = workdir_base
        self.max_workers = max_workers
        self.bwrap: str | None = None
        if isolation not in ("auto", "bwrap", "none"):
            raise ValueError(f"isolation must be 'auto', 'bwrap' or 'none', got {isolation!r}")
        if isolation != "none":
            self.bwrap = bwrap_path()
            if self.bwrap is None and isolation == "bwrap":
                raise RuntimeError("bubblewrap is not installed or does not work here (install `bubblewrap`)")
            if self.bwrap is None:
                _warn_once(
                    "no-bwrap",
                    "bubblewrap not available: sandbox falls back to rlimits + uid drop (no network or "
                    "filesystem isolation). Install the `bubblewrap` package for full isolation.",
                )
        if not IS_ROOT:
            _warn_once(
                "not-root",
                "not running as root: sandboxed code keeps this user's uid (no process-count limit)",
            )
        real = os.path.realpath(self.python)
        prefix = os.path.dirname(os.path.dirname(real))
        self._extra_ro = () if real.startswith("/usr/") else (prefix,)

    @property
    def isolation(self) -> str:
        """ "bwrap" or "none" (rlimits and uid drop only)."""
        return "bwrap" if self.bwrap else "none"

    def _command(self, argv: list[str], workdir: str) -> tuple[list[str], str]:
        if self.bwrap:
            return bwrap_argv(self.bwrap, workdir, argv, self._extra_ro), workdir
        return argv, workdir

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

        `compile_timeout_s` overrides the instance's for this call only; setting `cancel` stops the
        run (its processes are killed) and returns a sandbox_error saying so.
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
        try:
            slot = UidSlot()
        except RuntimeError as exc:
            return SandboxResult("sandbox_error", message=str(exc))
        workdir = None
        try:
            workdir = make_workdir(slot.uid, self.workdir_base)
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
            )
        except Exception as exc:  # our own failure, not the code's
            return SandboxResult("sandbox_error", message=f"sandbox failed: {type(exc).__name__}: {exc}")
        finally:
            slot.release()
            if workdir is not None:
                remove_workdir(workdir)

    def _run_in(
        self, lang, code, workdir, uid, timeout, memory, stdin, files, fetch, compile_timeout, cancel=None
    ) -> SandboxResult:
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
            built = self._exec(argv, workdir, uid, None, compile_timeout, max(memory, 4096), cancel)
            if built.cancelled:
                return _cancelled()
            compile_output = (built.stdout + built.stderr).decode(errors="replace")
            if built.timed_out or built.returncode != 0:
                why = (
                    "compile timed out"
                    if built.timed_out
                    else f"compilation failed (exit code {built.returncode})"
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
        raw = self._exec(argv, workdir, uid, stdin_bytes, timeout, memory, cancel)
        if raw.cancelled:
            return _cancelled()
        result = SandboxResult(
            status="ok",
            stdout=raw.stdout.decode(errors="replace"),
            stderr=raw.stderr.decode(errors="replace"),
            exit_code=raw.returncode,
            duration_s=raw.duration_s,
            truncated=raw.truncated,
            compile_output=compile_output,
        )
        if raw.timed_out:
            result.status, result.message = (
                "timeout",
                f"timed out after {timeout:g}s (wall clock); process killed",
            )
        elif raw.returncode != 0:
            result.status, result.message = "error", self._exit_text(raw.returncode)
        if raw.truncated:
            result.message = (result.message + "; " if result.message else "") + (
                f"output over {self.max_output_bytes} bytes was cut"
            )
        if fetch:
            result.files = read_files(workdir, fetch, self.max_output_bytes)
        return result

    def _exec(self, argv, workdir, uid, stdin, timeout, memory, cancel=None):
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
        )

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
        """Async twin of `run` (runs in a worker thread so the event loop never blocks)."""
        global _pool
        with _pool_lock:
            if _pool is None:
                _pool = concurrent.futures.ThreadPoolExecutor(self.max_workers, thread_name_prefix="sandbox")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(_pool, lambda: self.run(code, language, **kwargs))
