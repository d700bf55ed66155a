"""Grading a submission against tests in one sandbox run (all tests batched in a small harness)."""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field
from typing import Any

from envs.code.problems import CodeProblem

# The harness runs inside the sandbox. It keeps a private handle on the real stdout before any
# submitted code runs, times each test with SIGALRM, and reports one line prefixed with a per-run
# nonce so nothing the submission prints can pass for the report.
HARNESS = r"""
import contextlib, io, json, os, signal, sys
_cfg = json.loads(sys.stdin.read())
_report = os.fdopen(os.dup(1), "w")
_nonce, _tests, _limit, _program = _cfg["nonce"], _cfg["tests"], _cfg["per_test_s"], _cfg["program"]
with open("solution.py") as _f:
    _source = _f.read()
del _cfg
_results = []

def _timeout(signum, frame):
    raise TimeoutError("time limit exceeded")

signal.signal(signal.SIGALRM, _timeout)

def _run(fn):
    sink = io.StringIO()
    signal.setitimer(signal.ITIMER_REAL, _limit)
    try:
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(io.StringIO()):
            fn()
        return None, sink.getvalue()
    except SystemExit as e:
        return (None if e.code in (None, 0) else "SystemExit"), sink.getvalue()
    except BaseException as e:
        return type(e).__name__, sink.getvalue()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)

def _norm(text):
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines()).rstrip()

try:
    _code = compile(_source, "solution.py", "exec")
except BaseException as e:
    _code, _compile_error = None, type(e).__name__
if _code is None:
    _results = [_compile_error] * len(_tests)
elif _program:
    for _t in _tests:
        def _one(_t=_t):
            sys.stdin = io.StringIO(_t["input"])
            exec(_code, {"__name__": "__main__"})
        _err, _out = _run(_one)
        if _err is None and _norm(_out) != _norm(_t["output"]):
            _err = "WrongAnswer"
        _results.append(_err)
else:
    _ns = {"__name__": "solution"}
    _err, _ = _run(lambda: exec(_code, _ns))
    if _err is not None:
        _results = [_err] * len(_tests)
    else:
        for _t in _tests:
            _results.append(_run(lambda _t=_t: exec(_t, _ns))[0])
_report.write(_nonce + json.dumps(_results) + "\n")
_report.flush()
os._exit(0)
"""


@dataclass
class GradeReport:
    """How a submission did: per-test outcomes (None = passed, else why it failed)."""

    outcomes: list[str | None]
    status: str = "ok"
    message: str = ""
    duration_s: float = 0.0
    errors: dict[str, int] = field(default_factory=dict)

    @property
    def passed(self) -> int:
        """Tests passed."""
        return sum(o is None for o in self.outcomes)

    @property
    def total(self) -> int:
        """Tests run."""
        return len(self.outcomes)

    @property
    def fraction(self) -> float:
        """Fraction of tests passed."""
        return self.passed / self.total if self.total else 0.0

    def summary(self) -> str:
        """What the agent is told: counts and failure kinds, never the tests themselves."""
        text = f"Passed {self.passed}/{self.total} hidden tests."
        if self.errors:
            kinds = ", ".join(f"{n}× {kind}" for kind, n in sorted(self.errors.items()))
            text += f" Failures: {kinds}."
        if self.status != "ok" and self.message:
            text += f" The test run ended early: {self.message}."
        return text


def harness_run(
    problem: CodeProblem, solution: str, tests: list | tuple, per_test_s: float
) -> dict[str, Any]:
    """The sandbox request (code, stdin, files) that grades `solution` on `tests`, plus its nonce."""
    nonce = f"@@turngym-report-{secrets.token_hex(16)}@@"
    stdin = json.dumps(
        {"nonce": nonce, "tests": list(tests), "per_test_s": per_test_s, "program": problem.is_program}
    )
    return {"code": HARNESS, "stdin": stdin, "files": {"solution.py": solution}, "nonce": nonce}


def read_report(result: Any, nonce: str, n_tests: int) -> GradeReport:
    """Turn the sandbox result into a GradeReport (every test failed when no report came back)."""
    outcomes: list[str | None] | None = None
    for line in reversed((result.stdout or "").splitlines()):
        if line.startswith(nonce):
            try:
                parsed = json.loads(line[len(nonce) :])
            except ValueError:
                break
            if isinstance(parsed, list) and len(parsed) == n_tests:
                outcomes = [None if o is None else str(o) for o in parsed]
            break
    status, message = "ok", ""
    if outcomes is None:
        outcomes = ["NoReport"] * n_tests
        status = result.status if result.status != "ok" else "error"
        message = result.message or "the program ended before the tests finished"
    errors: dict[str, int] = {}
    for o in outcomes:
        if o is not None:
            errors[o] = errors.get(o, 0) + 1
    return GradeReport(outcomes, status, message, float(result.duration_s or 0.0), errors)


async def grade(
    sandbox: Any,
    problem: CodeProblem,
    solution: str,
    tests: list | tuple | None = None,
    per_test_s: float = 4.0,
) -> GradeReport:
    """Run `solution` against `tests` (default: the hidden tests) in one sandbox run."""
    tests = list(problem.tests if tests is None else tests)
    req = harness_run(problem, solution, tests, per_test_s)
    total_s = per_test_s * (len(tests) + 1) + 5.0
    result = await sandbox.arun(
        req["code"], "python", stdin=req["stdin"], files=req["files"], timeout_s=total_s
    )
    return read_report(result, req["nonce"], len(tests))
