"""`python -m envs check` runs its battery in a child process, and believes only what the child records.

The env under check is code the checker does not trust, and run in the checker's own process it could
end the check on its own terms: an env that called `sys.exit(0)` or `os._exit(0)` mid-battery made
`envs check` exit 0 ("passed"), and one that never returned from a call hung it with no deadline. Here
the child writes one JSON line per event to a pipe of its own (a check starting, each env call starting
and returning, each result) and a completion record last. The parent:

- stops the child when a call gives no answer within the deadline (`--call-timeout`), and fails the
  check it was in;
- fails the check in progress when the child ends without its completion record, whatever its exit
  status (0 included);
- shows the other checks as not run.

A passing battery is still only evidence: it tries a few seeds and a fixed list of inputs, so the
parent says so under the summary.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import json
import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from envs.registry.env_check import CHECK_NAMES, CheckResult, show_result, summarize

#: Seconds the child may take to start and import the env's modules, before the per-call deadline runs.
START_S = 120.0
_CHUNK = 65536


def not_a_proof(seeds: int) -> str:
    """The note printed under every battery's summary.

    >>> not_a_proof(3).startswith("note: a battery is not a proof")
    True
    """
    return (
        f"note: a battery is not a proof: it tried {seeds} seed(s) and a fixed list of inputs, and an env "
        "can still misbehave on inputs it never sent (pay a hedge, crash on turn 50); read its episodes too"
    )


@dataclasses.dataclass
class _Outcome:
    """What the parent learnt from the child's record."""

    results: list[CheckResult] = dataclasses.field(default_factory=list)
    current: str | None = None  # the check in progress
    last_call: str | None = None  # the last call the child told of ("step started", ...)
    usage: str | None = None  # a mistake in the user's options (exit 2), found by the child
    done: bool = False  # the completion record arrived
    broken: str | None = None  # the record itself was not ours (not JSON)


def check_in_child(
    env_id: str,
    seeds: int,
    env_kwargs: dict[str, Any],
    imports: list[str],
    call_timeout: float,
    show: Callable[[str], None] = print,
) -> int:
    """Run the battery on `env_id` in a child process; show each result as it comes; return the exit code.

    Args:
        env_id: A registered env id (with `imports`, known only once the child has imported them: this
            process never imports them).
        seeds: Seeds 0..seeds-1.
        env_kwargs: Constructor options.
        imports: Modules the child imports first (`--import`), from the working folder.
        call_timeout: Seconds one env call may take before the child is stopped.
        show: Where each line goes.

    Returns:
        0 when every check passed or was skipped, 1 otherwise (an env that ended the child or hung
        included).

    Raises:
        UsageError: the options are the user's mistake (the env refused them at build).
    """
    from turngym.common.cli_errors import UsageError

    read_fd, write_fd = os.pipe()
    job = {"env_id": env_id, "seeds": seeds, "kwargs": env_kwargs, "imports": imports, "cwd": os.getcwd()}
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "envs.registry.env_check_process", str(write_fd)],
            stdin=subprocess.PIPE,
            pass_fds=(write_fd,),
            start_new_session=True,  # the env's own children go with it when it is stopped
        )
    finally:
        os.close(write_fd)
    outcome, hung = _Outcome(), False
    try:
        assert proc.stdin is not None
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.write(json.dumps(job).encode())
            proc.stdin.close()
        hung = _follow(read_fd, outcome, call_timeout, lambda r: show_result(r, show))
    except BaseException:  # Ctrl-C included: the child goes too
        _stop(proc)
        raise
    finally:
        os.close(read_fd)
    if hung:
        _stop(proc)
    # The record ends before the process does (its pipe closes at exit): wait for the real status.
    status = _wait(proc, call_timeout)
    _stop(proc)  # whatever the env started and left behind in the child's session
    if outcome.usage is not None:
        raise UsageError(outcome.usage)
    results = outcome.results
    ended = _ending(outcome, hung, status, call_timeout)
    if ended is not None:
        show_result(ended, show)
        results.append(ended)
        shown = {r.name for r in results}
        for name in CHECK_NAMES if ended.name != "make" else ():  # nothing runs on an env that did not build
            if name not in shown:
                skipped = CheckResult(name, "SKIP", f"not run: the battery stopped at {ended.name}")
                show_result(skipped, show)
                results.append(skipped)
    code = summarize(env_id, results, show)
    print(not_a_proof(seeds), file=sys.stderr)
    return code


def _follow(fd: int, outcome: _Outcome, call_timeout: float, shown: Callable[[CheckResult], None]) -> bool:
    """Read the child's record until it ends; True when the child went quiet past the deadline."""
    selector = selectors.DefaultSelector()
    selector.register(fd, selectors.EVENT_READ)
    buffer, started, last = b"", False, time.monotonic()
    try:
        while not outcome.done and outcome.broken is None:
            allowed = call_timeout if started else max(call_timeout, START_S)
            left = last + allowed - time.monotonic()
            if left <= 0:
                return True
            if not selector.select(timeout=left):
                continue
            chunk = os.read(fd, _CHUNK)
            if not chunk:
                return False  # the child ended; whether it finished is the record's to say
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                last = time.monotonic()
                ready = _take(line, outcome, shown)
                started = started or ready
    finally:
        selector.close()
    return False


def _take(line: bytes, outcome: _Outcome, shown: Callable[[CheckResult], None]) -> bool:
    """Apply one record line to `outcome`; True once the child said it is ready."""
    try:
        event = json.loads(line)
        kind = event["event"]
    except (ValueError, TypeError, KeyError):
        outcome.broken = line[:80].decode("utf-8", "replace")
        return False
    if kind == "call":
        outcome.last_call = str(event["what"])
    elif kind == "start":
        outcome.current, outcome.last_call = str(event["name"]), None
    elif kind == "result":
        result = CheckResult(**{f.name: event.get(f.name) for f in dataclasses.fields(CheckResult)})
        outcome.results.append(result)
        shown(result)
    elif kind == "usage":
        outcome.usage = str(event["message"])
    elif kind == "done":
        outcome.done = True
    return True


def _ending(outcome: _Outcome, hung: bool, status: int | None, call_timeout: float) -> CheckResult | None:
    """The failed result that says how the battery ended early, or None when it finished."""
    name = outcome.current or "make"
    if outcome.current is not None and any(r.name == name for r in outcome.results):
        name = "battery"  # between checks
    if hung:
        call = outcome.last_call or ""
        what = (
            f"{call.removesuffix(' started')} gave no answer"
            if call.endswith(" started")
            else "the battery made no progress" + (f" after {call}" if call else "")
        )
        return CheckResult(name, "FAIL", f"{what} within {call_timeout:g} s (--call-timeout); stopped")
    if outcome.broken is not None:
        return CheckResult(name, "FAIL", f"the check's record was written over ({outcome.broken!r}); stopped")
    if not outcome.done:
        return CheckResult(
            name,
            "FAIL",
            f"the env ended the check's process (exit status {status}) before the battery finished; "
            "a battery that does not finish has not passed",
        )
    if status != 0:
        return CheckResult("battery", "FAIL", f"the check's process exited with status {status} after it")
    return None


def _stop(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def _wait(proc: subprocess.Popen, call_timeout: float) -> int | None:
    try:
        return proc.wait(timeout=max(call_timeout, 5.0))
    except subprocess.TimeoutExpired:  # finished, but its exit hangs (an atexit hook, a thread)
        _stop(proc)
        return proc.wait()


def main() -> int:
    """The child: the job as JSON on stdin, the record's pipe descriptor as the only argument."""
    from envs.registry.env_call_watch import CallWatch
    from envs.registry.env_check import run_checks

    record = os.fdopen(int(sys.argv[1]), "w", buffering=1)

    def emit(**event: Any) -> None:
        record.write(json.dumps(event, default=repr) + "\n")
        record.flush()

    job = json.loads(sys.stdin.read())
    if job["cwd"] not in sys.path:
        sys.path.insert(0, job["cwd"])
    import envs

    env_id, kwargs = job["env_id"], job["kwargs"]
    for module in job["imports"]:
        try:
            importlib.import_module(module)
        except ImportError as e:  # a module that is not there is the user's mistake (exit 2)
            emit(event="usage", message=f"--import {module}: {e}")
            emit(event="done")
            return 0
    try:
        envs.spec(env_id)
    except envs.UnknownEnvError as e:
        emit(event="usage", message=f"check {env_id}: {e}")
        emit(event="done")
        return 0
    emit(event="ready")
    watch = CallWatch(lambda what: emit(event="call", what=what))
    if kwargs:  # the options are the user's: a bad one is their mistake (exit 2), not the env's
        try:
            watch.make(lambda: envs.make(env_id, **kwargs)).close()
        except (envs.UnknownEnvError, ValueError, TypeError) as e:
            emit(event="usage", message=f"check {env_id}: {e}")
            emit(event="done")
            return 0
    run_checks(
        env_id,
        range(job["seeds"]),
        kwargs,
        watch=watch,
        on_start=lambda name: emit(event="start", name=name),
        on_result=lambda result: emit(event="result", **dataclasses.asdict(result)),
    )
    emit(event="done")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
