"""`run_capped`: run a sandboxed command to its end, a wall-clock or CPU-seconds limit or a cancel;
feed its stdin, cap what it writes, and kill everything it started either way."""

from __future__ import annotations

import contextlib
import math
import os
import selectors
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from tools.sandbox.limits import Limits
from tools.sandbox.parked import ParkedLauncher
from tools.sandbox.spawn import spawn
from tools.sandbox.uid_slot import kill_group, kill_uid

_CPU_CHECK_S = 0.2
_LINGER_S = 0.05  # after the main process exits, how long pipes held by a left-behind child are read


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
    parked: ParkedLauncher | None = None,
    kill_rest: Callable[[], object] | None = None,
) -> RawRun:
    """Run to completion, wall timeout or `cancel`; kill the whole group either way; cap each stream.

    With `cpu_seconds` (the run's cgroup CPU counter) the run also ends, as a timeout, once it has used
    more than `cpu_budget_s` CPU seconds since it started (checked every 0.2 s). `parked` (already in the
    run's cgroups, started with `env`) runs the command instead of a new launcher. `kill_rest` ends what
    the process group leaves behind (default: a /proc sweep of `uid`; the run's cgroup does it cheaper).
    """
    start = time.perf_counter()
    if parked is not None:
        proc = parked.launch(argv, cwd=cwd, limits=limits, uid=uid)
        if not stdin:
            proc.stdin.close()  # parked with a pipe for stdin: without input the code reads EOF at once
            proc.stdin = None
    else:
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
    cpu = _CpuBudget(cpu_seconds, cpu_budget_s, start)
    pipes = _Pipes(proc, stdin, max_output_bytes)
    deadline = start + timeout_s
    stop = ""
    try:
        while pipes.reading:
            now = time.perf_counter()
            stop = _stop_reason(now, deadline, pipes.exited_at, cancel, cpu)
            if stop:
                break
            wait = deadline - now if pipes.exited_at is None else _LINGER_S
            if cancel is not None:
                wait = min(wait, 0.05)  # an Event cannot wake select(): poll it (cancel within 50 ms)
            pipes.pump(min(wait, cpu.until_check(now)))
    finally:
        _end(proc, uid, kill_rest)
        pipes.close()
    ended = stop in ("timeout", "cpu", "cancelled")
    return RawRun(
        returncode=None if ended else proc.returncode,
        stdout=pipes.stdout,
        stderr=pipes.stderr,
        timed_out=stop in ("timeout", "cpu"),
        truncated=pipes.truncated,
        duration_s=time.perf_counter() - start,
        cancelled=stop == "cancelled",
        cpu_exceeded=stop == "cpu",
    )


def _stop_reason(
    now: float,
    deadline: float,
    exited_at: float | None,
    cancel: threading.Event | None,
    cpu: _CpuBudget,
) -> str:
    """Why the loop stops now ("exited", "timeout", "cancelled", "cpu"), or "" to keep reading."""
    if exited_at is not None and now - exited_at > _LINGER_S:
        return "exited"  # main process gone; what still holds the pipes is a left-behind child
    if now >= deadline:
        return "timeout"
    if cancel is not None and cancel.is_set():
        return "cancelled"
    if cpu.exceeded(now):
        return "cpu"
    return ""


def _end(proc: subprocess.Popen, uid: int | None, kill_rest: Callable[[], object] | None) -> None:
    kill_group(proc.pid)
    proc.wait()  # SIGKILLed or already exited: returns at once
    # Always end the rest: a PID namespace's teardown is not finished when bwrap is reaped, and without
    # bwrap a daemon may have left the process group.
    if kill_rest is not None:
        kill_rest()
    elif uid is not None:
        kill_uid(uid)


class _CpuBudget:
    """The run's CPU seconds (its cgroup's counter), read every 0.2 s against the budget."""

    def __init__(self, read: Callable[[], float] | None, budget_s: float, start: float) -> None:
        self._read = read
        self._budget_s = budget_s
        self._base = read() if read is not None else 0.0
        self._next = start + _CPU_CHECK_S

    def until_check(self, now: float) -> float:
        """Seconds until the next reading is due (infinite without a counter)."""
        return math.inf if self._read is None else max(self._next - now, 0.0)

    def exceeded(self, now: float) -> bool:
        """True when a reading is due and shows more than the budget used."""
        if self._read is None or now < self._next:
            return False
        self._next = now + _CPU_CHECK_S
        return self._read() - self._base > self._budget_s


class _Pipes:
    """The run's pipes and exit: stdin fed in chunks, stdout/stderr read into capped buffers, exit via pidfd."""

    def __init__(self, proc: subprocess.Popen, stdin: bytes | None, max_output_bytes: int) -> None:
        self._proc = proc
        self._max = max_output_bytes
        self._out, self._err = proc.stdout.fileno(), proc.stderr.fileno()
        self._bufs = {self._out: bytearray(), self._err: bytearray()}
        self._open = set(self._bufs)
        self.truncated = False
        self.exited_at: float | None = None
        self._sel = selectors.DefaultSelector()
        for fd in self._bufs:
            os.set_blocking(fd, False)
            self._sel.register(fd, selectors.EVENT_READ)
        self._pidfd = os.pidfd_open(proc.pid)
        self._sel.register(self._pidfd, selectors.EVENT_READ)
        self._pending = memoryview(stdin) if stdin else None
        if self._pending is not None:
            os.set_blocking(proc.stdin.fileno(), False)
            self._sel.register(proc.stdin.fileno(), selectors.EVENT_WRITE)

    @property
    def reading(self) -> bool:
        """True while stdout or stderr is still open."""
        return bool(self._open)

    @property
    def stdout(self) -> bytes:
        return bytes(self._bufs[self._out])

    @property
    def stderr(self) -> bytes:
        return bytes(self._bufs[self._err])

    def pump(self, wait_s: float) -> None:
        """Handle what is ready within `wait_s`: the exit, stdin room, output."""
        for key, _ in self._sel.select(wait_s):
            if key.fd == self._pidfd:
                self._sel.unregister(self._pidfd)
                self.exited_at = time.perf_counter()
            elif self._pending is not None and key.fd == self._proc.stdin.fileno():
                self._feed(key.fd)
            else:
                self._drain(key.fd)

    def _feed(self, fd: int) -> None:
        try:
            n = os.write(fd, self._pending[:65536])
            self._pending = self._pending[n:]
        except BrokenPipeError:
            self._pending = self._pending[:0]
        if not self._pending:
            self._sel.unregister(fd)
            self._proc.stdin.close()
            self._pending = None

    def _drain(self, fd: int) -> None:
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            return
        if not chunk:
            self._sel.unregister(fd)
            self._open.discard(fd)
            return
        buf = self._bufs[fd]
        room = self._max - len(buf)
        if len(chunk) > room:
            self.truncated = True
            chunk = chunk[: max(room, 0)]
        buf += chunk

    def close(self) -> None:
        self._sel.close()
        os.close(self._pidfd)
        for stream in (self._proc.stdin, self._proc.stdout, self._proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
