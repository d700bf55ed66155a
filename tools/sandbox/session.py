"""`PythonSession`: one sandboxed Python process per episode whose variables persist across calls."""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import os
import selectors
import struct
import subprocess
import threading
import time

from tools.sandbox.bwrap import SANDBOX_DIR
from tools.sandbox.cgroup import RunCgroup
from tools.sandbox.limits import Limits
from tools.sandbox.local import LocalSandbox
from tools.sandbox.result import SandboxResult
from tools.sandbox.spawn import spawn
from tools.sandbox.uid_slot import UidSlot, kill_group, kill_uid
from tools.sandbox.workdir import make_workdir, remove_workdir, write_files

_DRIVER = os.path.join(os.path.dirname(__file__), "session_driver.py")
_spawn_pool: concurrent.futures.ThreadPoolExecutor | None = None
_spawn_lock = threading.Lock()


def _spawner() -> concurrent.futures.ThreadPoolExecutor:
    global _spawn_pool
    with _spawn_lock:
        if _spawn_pool is None:
            _spawn_pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="sandbox-session-spawn")
        return _spawn_pool


class PythonSession:
    """A persistent sandboxed interpreter. A timed-out cell kills it; the next call starts afresh.

    The sandbox's whole-run limits hold for the whole session (with cgroups): `memory_mb` over the
    interpreter, every process it starts and its tmpfs pages, `nproc` processes, `cpus` cores; the work
    dir is a tmpfs of `disk_mb` (as root). Closing kills every process the session started.
    """

    def __init__(self, sandbox: LocalSandbox | None = None, *, session_cpu_s: int = 600) -> None:
        self.sandbox = sandbox or LocalSandbox()
        self.session_cpu_s = session_cpu_s
        self._proc: subprocess.Popen | None = None
        self._slot: UidSlot | None = None
        self._workdir: str | None = None
        self._group: RunCgroup | None = None
        self._lock = threading.Lock()
        self._restarted = False

    @property
    def alive(self) -> bool:
        """True while the interpreter process runs."""
        return self._proc is not None and self._proc.poll() is None

    def _start(self) -> None:
        sb = self.sandbox
        self._slot = UidSlot()
        uid = self._slot.uid
        # The whole-run limits of LocalSandbox.run, for the whole session: one cgroup bounds the memory,
        # processes and CPU of the interpreter and everything it starts (tmpfs pages included), and the
        # work dir is a size-capped tmpfs, so forked children and written files cannot escape either.
        self._group = sb._run_cgroup(sb.memory_mb, uid)
        self._workdir = make_workdir(uid, sb.workdir_base, sb._workdir_size_mb())
        with open(_DRIVER, "rb") as fh:
            write_files(self._workdir, {"_driver.py": fh.read()}, uid)
        here = SANDBOX_DIR if sb.bwrap else self._workdir
        argv = [sb.python, "-I", "-S", "-u", f"{here}/_driver.py", str(sb.max_output_bytes)]
        command, cwd = sb._command(argv, self._workdir)
        limits = Limits(self.session_cpu_s, sb.memory_mb, sb.nproc, sb.fsize_mb, sb.nofile)
        # bubblewrap's --die-with-parent follows the *thread* that forked it, so spawn from a thread that
        # lives as long as the process does (callers may use short-lived worker threads).
        env = sb._env(self._workdir)
        group = self._group
        self._proc = (
            _spawner()
            .submit(
                lambda: spawn(
                    command,
                    cwd=cwd,
                    env=env,
                    limits=limits,
                    uid=uid,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    cgroup_procs=group.procs_files if group is not None else (),
                )
            )
            .result()
        )

    def run(self, code: str, timeout_s: float | None = None) -> SandboxResult:
        """Run a cell; the value of a final expression is printed, as in a notebook."""
        timeout = float(timeout_s if timeout_s is not None else self.sandbox.timeout_s)
        with self._lock:
            notice = ""
            if self._proc is not None and not self.alive:
                self._stop()
                self._restarted = True
            if self._restarted:
                notice = "[the previous session had ended; this is a fresh interpreter]\n"
                self._restarted = False
            if self._proc is None:
                try:
                    self._start()
                except Exception as exc:
                    self._stop()
                    return SandboxResult("sandbox_error", message=f"could not start session: {exc}")
            start = time.perf_counter()
            try:
                reply = self._exchange(code.encode(), timeout)
            except TimeoutError:
                self._stop()
                self._restarted = True
                return SandboxResult(
                    "timeout",
                    duration_s=time.perf_counter() - start,
                    message=f"timed out after {timeout:g}s; the session was killed and its variables are lost",
                )
            except (OSError, ValueError, EOFError) as exc:
                code_ = self._proc.wait() if self._proc else None
                self._stop()
                self._restarted = True
                return SandboxResult(
                    "error",
                    exit_code=code_,
                    duration_s=time.perf_counter() - start,
                    message=f"the interpreter died ({self.sandbox._exit_text(code_) if code_ is not None else exc}); "
                    "its variables are lost",
                )
            return SandboxResult(
                "error" if reply["error"] else "ok",
                stdout=notice + reply["output"],
                exit_code=1 if reply["error"] else 0,
                duration_s=time.perf_counter() - start,
                truncated=reply["truncated"],
                message="the cell raised an exception" if reply["error"] else "",
            )

    def _exchange(self, payload: bytes, timeout: float) -> dict:
        proc = self._proc
        assert proc is not None and proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(struct.pack(">I", len(payload)) + payload)
        proc.stdin.flush()
        deadline = time.perf_counter() + timeout
        fd = proc.stdout.fileno()
        buf = b""
        need = 4
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while True:
                while len(buf) < need:
                    left = deadline - time.perf_counter()
                    if left <= 0 or not sel.select(left):
                        raise TimeoutError
                    chunk = os.read(fd, 1 << 16)
                    if not chunk:
                        raise EOFError("interpreter closed its pipe")
                    buf += chunk
                if need == 4:
                    need = 4 + struct.unpack(">I", buf[:4])[0]
                    continue
                return json.loads(buf[4:need])

    def _stop(self) -> None:
        proc, self._proc = self._proc, None
        group, self._group = self._group, None
        if group is not None:
            group.kill_all()  # every process the session started, whatever session or group it moved to
        if proc is not None:
            kill_group(proc.pid)
            proc.wait()
            for stream in (proc.stdin, proc.stdout):
                if stream is not None:
                    with contextlib.suppress(OSError):
                        stream.close()
        if self._slot is not None:
            if self._slot.uid is not None:
                kill_uid(self._slot.uid)
            self._slot.release()
            self._slot = None
        if self._workdir is not None:
            remove_workdir(self._workdir)
            self._workdir = None
        if group is not None:
            group.remove()

    def close(self) -> None:
        """Kill the interpreter and delete its files; idempotent."""
        with self._lock:
            self._stop()

    def __enter__(self) -> PythonSession:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        if self._proc is not None or self._workdir is not None:
            with contextlib.suppress(Exception):
                self._stop()


__all__ = ["PythonSession"]
