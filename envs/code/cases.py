"""Hidden test cases as data: a function call with its expected value, or a program's stdin and stdout.

A problem's tests are read once, in the grader's process, into cases whose expected values never leave
it. Only the inputs are sent to the sandbox; what comes back is compared there by `same_value`.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

# Names a problem author may use to build large inputs in a test (`list(range(20000))`, `'a' * 60`).
# Test text comes from the problem file, never from the policy; this keeps it to expressions anyway.
_INPUT_BUILTINS = {
    "list": list,
    "range": range,
    "tuple": tuple,
    "dict": dict,
    "set": set,
    "frozenset": frozenset,
    "str": str,
    "sorted": sorted,
    "reversed": reversed,
    "zip": zip,
    "len": len,
    "abs": abs,
    "min": min,
    "max": max,
    "sum": sum,
}


class CaseError(ValueError):
    """A test is not in a form the grader can check without running it next to the submission."""


@dataclass(frozen=True)
class FunctionCase:
    """Call `entry_point(*args, **kwargs)`; the result must equal `expected` (type included)."""

    entry_point: str
    args: tuple
    kwargs: dict
    expected: Any


@dataclass(frozen=True)
class ProgramCase:
    """Run the submission as a program with `input` on stdin; its stdout must equal `output`."""

    input: str
    output: str


def _value(node: ast.expr, where: str) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        pass
    code = compile(ast.Expression(node), where, "eval")
    if any(name not in _INPUT_BUILTINS for name in code.co_names):
        raise CaseError(
            f"{where}: `{ast.unparse(node)}` uses names other than literals and {sorted(_INPUT_BUILTINS)}"
        )
    try:
        return eval(code, {"__builtins__": _INPUT_BUILTINS})  # noqa: S307 - author's test text, limited names
    except Exception as exc:
        raise CaseError(f"{where}: cannot evaluate `{ast.unparse(node)}`: {exc}") from None


def parse_case(test: str | dict, entry_point: str | None, where: str) -> FunctionCase | ProgramCase:
    """One test as data: `{"input", "output"}`, `{"args", "kwargs"?, "expected"}` or the text
    `assert entry_point(<args>) == <expected>` with literal (or simply built) arguments and value."""
    if isinstance(test, dict) and "output" in test:
        return ProgramCase(str(test.get("input", "")), str(test["output"]))
    if isinstance(test, dict) and "expected" in test:
        if not entry_point:
            raise CaseError(f"{where}: a test with `args`/`expected` needs the problem's `entry_point`")
        args, kwargs = test.get("args", []), test.get("kwargs", {})
        if not isinstance(args, list) or not isinstance(kwargs, dict):
            raise CaseError(f"{where}: `args` must be a list and `kwargs` an object")
        return FunctionCase(entry_point, tuple(args), dict(kwargs), test["expected"])
    if not isinstance(test, str):
        raise CaseError(f"{where}: a test must be a string or an object, got {type(test).__name__}")
    hint = (
        "write function tests as `assert f(args) == expected` or {'args': [...], 'expected': ...} "
        "(the grader compares values in its own process; other assertions would run inside the "
        "submission's interpreter, where it can forge them)"
    )
    try:
        tree = ast.parse(test.strip())
    except SyntaxError as exc:
        raise CaseError(f"{where}: test is not valid Python ({exc.msg}); {hint}") from None
    stmt = tree.body[0] if len(tree.body) == 1 else None
    cmp = stmt.test if isinstance(stmt, ast.Assert) else None
    if not (
        isinstance(cmp, ast.Compare)
        and len(cmp.ops) == 1
        and isinstance(cmp.ops[0], ast.Eq)
        and isinstance(cmp.left, ast.Call)
        and isinstance(cmp.left.func, ast.Name)
        and not any(isinstance(a, ast.Starred) for a in cmp.left.args)
        and all(k.arg is not None for k in cmp.left.keywords)
    ):
        raise CaseError(f"{where}: unsupported test `{test.strip()[:80]}`; {hint}")
    name = cmp.left.func.id
    if entry_point and name != entry_point:
        raise CaseError(f"{where}: the test calls `{name}`, but the problem's entry point is `{entry_point}`")
    args = tuple(_value(a, where) for a in cmp.left.args)
    kwargs = {k.arg: _value(k.value, where) for k in cmp.left.keywords}
    return FunctionCase(name, args, kwargs, _value(cmp.comparators[0], where))


def normalize_output(text: str) -> str:
    """Program output compared line by line, trailing whitespace and trailing blank lines ignored."""
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines()).rstrip()


def same_value(got: Any, want: Any) -> bool:
    """Exact equality of plain values, types included (`True` is not `1`, a list is not a tuple)."""
    try:
        return _same(got, want)
    except RecursionError:
        return False


def _same(got: Any, want: Any) -> bool:
    if type(got) is not type(want):
        return False
    if isinstance(want, list | tuple):
        return len(got) == len(want) and all(_same(g, w) for g, w in zip(got, want, strict=True))
    if isinstance(want, dict):
        if len(got) != len(want) or _typed_keys(got) != _typed_keys(want):
            return False
        keys = {(type(k), k): k for k in got}
        return all(_same(got[keys[(type(k), k)]], v) for k, v in want.items())
    if isinstance(want, set | frozenset):
        return _typed_keys(got) == _typed_keys(want)
    if isinstance(want, float) and want != want:
        return got != got  # both NaN
    return bool(got == want)


def _typed_keys(items: Any) -> set[tuple[type, Any]]:
    # (type, value) pairs: `{1}` and `{True}` are different sets here, as they are different answers.
    return {(type(k), k) for k in items}
