"""Programming problems: the bundled set (JSONL, in tiers) and loading users' own JSONL files."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from envs.code.cases import CaseError, FunctionCase, normalize_output, parse_case, same_value

BUNDLED = Path(__file__).parent / "data" / "problems.jsonl"
TIERS = ("easy", "medium", "hard")


@dataclass(frozen=True)
class CodeProblem:
    """A problem statement, visible examples, hidden tests and (optionally) a reference solution.

    A function test is `assert f(<args>) == <expected>` (literal arguments and value) or
    `{"args": [...], "kwargs": {...}, "expected": ...}`: the function's result must equal the expected
    value, types included. A program test is `{"input": ..., "output": ...}`: the solution runs as a
    program with that standard input and must print that output (trailing whitespace ignored). Either
    way the grader compares in its own process (see `envs.code.grader`).
    """

    id: str
    prompt: str
    tests: tuple[str | dict[str, str], ...]
    examples: tuple[str | dict[str, str], ...] = ()
    reference: str | None = None
    tier: str = "medium"
    entry_point: str | None = None
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def is_program(self) -> bool:
        """True when the tests feed standard input and compare standard output."""
        return any(isinstance(t, dict) and "output" in t for t in self.tests)


class ProblemFileError(ValueError):
    """A problems JSONL file is unreadable or a line in it is wrong (the message says which)."""


def _check_test(test: Any, where: str) -> str | dict[str, str]:
    if isinstance(test, str) and test.strip():
        return test
    if (
        isinstance(test, dict)
        and isinstance(test.get("input", ""), str)
        and isinstance(test.get("output"), str)
    ):
        return {"input": test.get("input", ""), "output": test["output"]}
    if isinstance(test, dict) and "expected" in test:
        return test
    raise ProblemFileError(
        f"{where}: a test must be `assert f(...) == value`, {{'args': [...], 'expected': ...}} or "
        f"{{'input': str, 'output': str}}, got {test!r:.80}"
    )


def _check_not_constant(cases: list, where: str) -> None:
    # A problem whose tests all expect the same answer pays a policy that ignores the input.
    wanted = [c.expected if isinstance(c, FunctionCase) else normalize_output(c.output) for c in cases]
    if all(same_value(w, wanted[0]) for w in wanted[1:]):
        raise ProblemFileError(
            f"{where}: every test expects the same answer ({wanted[0]!r:.60}), so a constant answer would pass; "
            "add tests with different expected values"
        )


def problem_from_dict(row: Any, where: str) -> CodeProblem:
    """One problem from a parsed JSONL row; `where` names the file and line in errors."""
    if not isinstance(row, dict):
        raise ProblemFileError(f"{where}: expected a JSON object, got {type(row).__name__}")
    prompt, tests = row.get("prompt"), row.get("tests")
    if not isinstance(prompt, str) or not prompt.strip():
        raise ProblemFileError(f"{where}: `prompt` must be a non-empty string")
    if not isinstance(tests, list) or not tests:
        raise ProblemFileError(f"{where}: `tests` must be a non-empty list")
    reference = row.get("reference")
    if reference is not None and not isinstance(reference, str):
        raise ProblemFileError(f"{where}: `reference` must be a string of code")
    tier = row.get("tier", "medium")
    checked = tuple(_check_test(t, where) for t in tests)
    kinds = {isinstance(t, dict) and "output" in t for t in checked}
    if len(kinds) > 1:
        raise ProblemFileError(
            f"{where}: mix of function tests and input/output tests; use one kind per problem"
        )
    entry_point = row.get("entry_point")
    try:  # read every test as data now, so a file the grader cannot check fails at load, not mid-run
        names = {getattr(parse_case(t, entry_point, where), "entry_point", None) for t in checked}
    except CaseError as exc:
        raise ProblemFileError(str(exc)) from None
    _check_not_constant([parse_case(t, entry_point, where) for t in checked], where)
    if len(names - {None}) > 1:
        raise ProblemFileError(f"{where}: tests call more than one function: {sorted(names - {None})}")
    known = {"id", "prompt", "tests", "examples", "reference", "tier", "entry_point"}
    return CodeProblem(
        id=str(row.get("id", where.rsplit(":", 1)[-1])),
        prompt=prompt,
        tests=checked,
        examples=tuple(_check_test(t, where) for t in row.get("examples") or ()),
        reference=reference,
        tier=str(tier),
        entry_point=row.get("entry_point"),
        extra={k: v for k, v in row.items() if k not in known},
    )


def load_problems(path: str | Path) -> list[CodeProblem]:
    """Problems from a JSONL file: one object per line with `prompt`, `tests` and optional
    `reference`, `examples`, `tier`, `id`, `entry_point`. Blank lines are skipped."""
    path = Path(path)
    try:
        lines = path.read_text().splitlines()
    except OSError as e:
        raise ProblemFileError(f"{path}: cannot read the file ({e.strerror or e})") from None
    problems = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise ProblemFileError(f"{where}: not valid JSON ({e.msg})") from None
        if isinstance(row, dict):
            row.setdefault("id", f"{path.stem}-{number}")
        problems.append(problem_from_dict(row, where))
    if not problems:
        raise ProblemFileError(f"{path}: no problems in the file")
    return problems


@cache
def bundled_problems() -> tuple[CodeProblem, ...]:
    """The problems that ship with turngym."""
    return tuple(load_problems(BUNDLED))
