"""Grading a submission against hidden tests, with nothing the submission can reach deciding the score.

The submission runs in its own sandboxed process; it is given test inputs only. Function problems: one
sandbox run calls the function on every input (`function_runner.py`) and prints the results as Python
literals; program problems: one sandbox run per test, stdin in, stdout out. The grader, in its own
process, decodes what came back into plain values and compares them with the expected values, which
never enter the sandbox. Whatever the submission does to its own interpreter, the only thing it can
change is the answers it reports.
"""

from __future__ import annotations

import ast
import asyncio
import builtins
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from envs.code.cases import FunctionCase, ProgramCase, normalize_output, parse_case, same_value
from envs.code.problems import CodeProblem

_RUNNER = Path(__file__).with_name("function_runner.py")
_MAX_RESULT_CHARS = 1 << 20
# Failure kinds shown to the agent come from this fixed vocabulary, so a submission cannot smuggle
# anything about the hidden inputs into the conversation through an exception's name.
_RUNNER_KINDS = frozenset({"Timeout", "NotPlainData", "CompileError", "NoFunction"})
_BUILTIN_KINDS = frozenset(
    n for n, v in vars(builtins).items() if isinstance(v, type) and issubclass(v, BaseException)
)


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


@cache
def runner_source() -> str:
    """The sandbox-side program that calls submitted functions on the inputs."""
    return _RUNNER.read_text(encoding="utf-8")


def cases_of(problem: CodeProblem, tests: list | tuple | None = None) -> list[FunctionCase | ProgramCase]:
    """The problem's tests (default: the hidden ones) as cases with expected values."""
    chosen = problem.tests if tests is None else tests
    return [parse_case(t, problem.entry_point, f"{problem.id} test {i}") for i, t in enumerate(chosen)]


def failure_kind(name: str) -> str:
    """A failure name reported from the sandbox, limited to a fixed vocabulary."""
    return name if name in _RUNNER_KINDS or name in _BUILTIN_KINDS else "Exception"


def decode_result(text: str) -> tuple[bool, Any]:
    """(True, value) when `text` is a Python literal of plain values, else (False, None)."""
    if len(text) > _MAX_RESULT_CHARS:
        return False, None
    try:
        return True, ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None


def read_function_results(stdout: str, cases: list[FunctionCase]) -> list[str | None]:
    """Outcome per case from the runner's lines; a missing or repeated line fails that case."""
    lines: dict[int, list[tuple[str, str]]] = {}
    for line in stdout.splitlines():
        parts = line.split("\t", 2)
        if len(parts) != 3 or not parts[0].isdecimal() or len(parts[0]) > 6:
            continue
        lines.setdefault(int(parts[0]), []).append((parts[1], parts[2]))
    outcomes: list[str | None] = []
    for index, case in enumerate(cases):
        got = lines.get(index, [])
        if len(got) != 1:
            outcomes.append("NoResult")
            continue
        tag, payload = got[0]
        if tag == "err":
            outcomes.append(failure_kind(payload))
            continue
        ok, value = decode_result(payload) if tag == "ok" else (False, None)
        if not ok:
            outcomes.append("NotPlainData")
        else:
            outcomes.append(None if same_value(value, case.expected) else "WrongAnswer")
    return outcomes


def _tally(outcomes: list[str | None]) -> dict[str, int]:
    errors: dict[str, int] = {}
    for o in outcomes:
        if o is not None:
            errors[o] = errors.get(o, 0) + 1
    return errors


async def grade_calls(
    sandbox: Any,
    config: dict[str, Any],
    files: dict[str, str],
    cases: list,
    timeout_s: float,
    ended_early: str,
) -> GradeReport:
    """One sandbox run of the function runner on `config`; each case's outcome against its `.expected`."""
    result = await sandbox.arun(
        runner_source(), "python", stdin=repr(config), files=files, timeout_s=timeout_s
    )
    outcomes = read_function_results(result.stdout or "", cases)
    status, message = "ok", ""
    if result.status == "sandbox_error":
        status, message = "sandbox_error", result.message
    elif any(o == "NoResult" for o in outcomes) and result.status != "ok":
        status, message = result.status, result.message or ended_early
    return GradeReport(outcomes, status, message, float(result.duration_s or 0.0), _tally(outcomes))


async def _grade_function(
    sandbox: Any, solution: str, cases: list[FunctionCase], per_test_s: float
) -> GradeReport:
    config = {
        "file": "solution.py",
        "limit_s": per_test_s,
        "calls": [(None, c.entry_point, c.args, c.kwargs) for c in cases],
    }
    return await grade_calls(
        sandbox,
        config,
        {"solution.py": solution},
        cases,
        timeout_s=per_test_s * (len(cases) + 1) + 5.0,
        ended_early="the program ended before the tests finished",
    )


async def _grade_program(
    sandbox: Any, solution: str, cases: list[ProgramCase], per_test_s: float
) -> GradeReport:
    async def one(case: ProgramCase) -> tuple[str | None, Any]:
        result = await sandbox.arun(solution, "python", stdin=case.input, timeout_s=per_test_s)
        if result.status == "timeout":
            return "Timeout", result
        if result.status != "ok" or result.exit_code != 0:
            return ("SandboxError" if result.status == "sandbox_error" else "RuntimeError"), result
        same = normalize_output(result.stdout or "") == normalize_output(case.output)
        return (None if same and not result.truncated else "WrongAnswer"), result

    done = await asyncio.gather(*(one(c) for c in cases))
    outcomes = [o for o, _ in done]
    errors = [r for o, r in done if o == "SandboxError"]
    status, message = ("sandbox_error", errors[0].message) if errors else ("ok", "")
    duration = sum(float(r.duration_s or 0.0) for _, r in done)
    return GradeReport(outcomes, status, message, duration, _tally(outcomes))


async def grade(
    sandbox: Any,
    problem: CodeProblem,
    solution: str,
    tests: list | tuple | None = None,
    per_test_s: float = 4.0,
) -> GradeReport:
    """Run `solution` on the inputs of `tests` (default: the hidden tests) and score what comes back."""
    cases = cases_of(problem, tests)
    function_cases = [c for c in cases if isinstance(c, FunctionCase)]
    program_cases = [c for c in cases if isinstance(c, ProgramCase)]
    if function_cases and program_cases:
        raise ValueError(f"{problem.id}: mixes function and program tests; use one kind per problem")
    if program_cases:
        return await _grade_program(sandbox, solution, program_cases, per_test_s)
    if len({c.entry_point for c in function_cases}) > 1:
        raise ValueError(f"{problem.id}: tests call more than one function")
    return await _grade_function(sandbox, solution, function_cases, per_test_s)
