"""Exact arithmetic on rationals through an AST walk (no `eval`): the `calculator` tool's evaluator.

Standard library only, so that it also runs as a worker process of its own (`python -I -S
arithmetic.py`): `Calculator` evaluates each expression there, under a deadline that kills the process,
because some expressions that pass every size check still take minutes (`round(1/3, 10**7)` grows
about N^1.6) and a process is the one thing that can be stopped in the middle of a C-level big-integer
operation. The worker reads one JSON request per line (`{"expression": ...}`) and answers one JSON line
(`{"text": ..., "exact": ...}` or `{"error": ...}`).
"""

from __future__ import annotations

import ast
import contextvars
import json
import math
import operator
import sys
from fractions import Fraction

_MAX_EXPR_CHARS = 2000
_MAX_BITS = 20_000  # results larger than this are refused, so `9**9**9` cannot hang the worker
_BINOPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}
_CONSTANTS = {"pi": Fraction(math.pi), "e": Fraction(math.e)}
_exact = contextvars.ContextVar("calculator_exact", default=True)


def _inexact(value: float) -> Fraction:
    _exact.set(False)
    return Fraction(value)


class CalcError(ValueError):
    """A problem with the expression, phrased for the model."""


def _size_ok(value: Fraction) -> Fraction:
    if value.numerator.bit_length() > _MAX_BITS or value.denominator.bit_length() > _MAX_BITS:
        raise CalcError("result too large")
    return value


def _int(value: Fraction, what: str) -> int:
    if value.denominator != 1:
        raise CalcError(f"{what} needs an integer, got {format_number(value)}")
    return value.numerator


def _sqrt(x: Fraction) -> Fraction:
    if x < 0:
        raise CalcError("sqrt of a negative number")
    n, d = math.isqrt(x.numerator), math.isqrt(x.denominator)
    if n * n == x.numerator and d * d == x.denominator:
        return Fraction(n, d)
    try:
        return _inexact(math.sqrt(x))
    except OverflowError:
        raise CalcError("result too large for a decimal approximation") from None


def _factorial(x: Fraction) -> Fraction:
    n = _int(x, "factorial")
    if n < 0 or n > 2000:
        raise CalcError("factorial needs an integer between 0 and 2000")
    return Fraction(math.factorial(n))


def _round(x: Fraction, digits: Fraction = Fraction(0)) -> Fraction:
    places = _int(digits, "round")
    return Fraction(round(x, places))


_FUNCS = {
    "abs": (abs, 1, 1),
    "sqrt": (_sqrt, 1, 1),
    "floor": (lambda x: Fraction(math.floor(x)), 1, 1),
    "ceil": (lambda x: Fraction(math.ceil(x)), 1, 1),
    "round": (_round, 1, 2),
    "min": (min, 1, 100),
    "max": (max, 1, 100),
    "gcd": (lambda *a: Fraction(math.gcd(*(_int(x, "gcd") for x in a))), 1, 100),
    "lcm": (lambda *a: Fraction(math.lcm(*(_int(x, "lcm") for x in a))), 1, 100),
    "factorial": (_factorial, 1, 1),
    "log": (lambda x, b=None: _inexact(math.log(x) if b is None else math.log(x, b)), 1, 2),
    "exp": (lambda x: _inexact(math.exp(x)), 1, 1),
    "sin": (lambda x: _inexact(math.sin(x)), 1, 1),
    "cos": (lambda x: _inexact(math.cos(x)), 1, 1),
    "tan": (lambda x: _inexact(math.tan(x)), 1, 1),
}


def _pow(base: Fraction, exp: Fraction) -> Fraction:
    if exp.denominator == 1:
        e = exp.numerator
        if (
            abs(e) > 100_000
            or (base.numerator.bit_length() + base.denominator.bit_length()) * abs(e) > 4 * _MAX_BITS
        ) and base not in (0, 1, -1):
            raise CalcError("result too large")
        if base == 0 and e < 0:
            raise CalcError("division by zero")
        return base**e
    if base < 0:
        raise CalcError("fractional power of a negative number")
    root = _sqrt(base) if exp.denominator == 2 else None
    if root is not None and (root.numerator**2, root.denominator**2) == (base.numerator, base.denominator):
        return _pow(root, Fraction(exp.numerator))
    try:
        return _inexact(float(base) ** float(exp))
    except OverflowError:
        raise CalcError("result too large") from None


def evaluate(expression: str) -> Fraction:
    """Evaluate an arithmetic expression exactly; raise CalcError with a clear message otherwise."""
    return evaluate_ex(expression)[0]


def evaluate_ex(expression: str) -> tuple[Fraction, bool]:
    """(value, exact): `exact` is False once an irrational function or constant was used."""
    token = _exact.set(True)
    try:
        value = _evaluate(expression)
        return value, _exact.get()
    finally:
        _exact.reset(token)


def _evaluate(expression: str) -> Fraction:
    if len(expression) > _MAX_EXPR_CHARS:
        raise CalcError(f"expression longer than {_MAX_EXPR_CHARS} characters")
    text = expression.replace("^", "**").replace("×", "*").replace("÷", "/").strip()
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise CalcError(f"cannot parse expression: {exc.msg} (column {exc.offset})") from None
    return _size_ok(_eval(tree.body))


def _eval(node: ast.AST) -> Fraction:
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, (int, float))
        and not isinstance(node.value, bool)
    ):
        return Fraction(str(node.value)) if isinstance(node.value, float) else Fraction(node.value)
    if isinstance(node, ast.BinOp):
        left, right = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Pow):
            return _size_ok(_pow(left, right))
        op = _BINOPS.get(type(node.op))
        if op is None:
            raise CalcError(f"operator {type(node.op).__name__} is not supported")
        if isinstance(node.op, (ast.Div, ast.FloorDiv, ast.Mod)) and right == 0:
            raise CalcError("division by zero")
        return _size_ok(Fraction(op(left, right)))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
        value = _eval(node.operand)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.Name):
        if node.id in _CONSTANTS:
            _exact.set(False)
            return _CONSTANTS[node.id]
        raise CalcError(f"unknown name `{node.id}`")
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        spec = _FUNCS.get(node.func.id)
        if spec is None:
            raise CalcError(f"unknown function `{node.func.id}`; available: {', '.join(sorted(_FUNCS))}")
        fn, lo, hi = spec
        if node.keywords or not lo <= len(node.args) <= hi:
            raise CalcError(
                f"`{node.func.id}` takes {lo}{'' if lo == hi else f' to {hi}'} positional argument(s)"
            )
        try:
            return _size_ok(Fraction(fn(*(_eval(a) for a in node.args))))
        except (ValueError, OverflowError, ZeroDivisionError) as exc:
            if isinstance(exc, CalcError):
                raise
            raise CalcError(f"`{node.func.id}`: {exc}") from None
    raise CalcError(f"unsupported syntax: {ast.unparse(node)!r}")


def format_number(value: Fraction, exact: bool = True) -> str:
    """Integers as integers, finite decimals as decimals, other rationals as `p/q (≈ decimal)`."""
    if not exact:
        return f"≈ {_approx(value, 15)}"
    if value.denominator == 1:
        return str(value.numerator)
    d = value.denominator
    twos = fives = 0
    while d % 2 == 0:
        d //= 2
        twos += 1
    while d % 5 == 0:
        d //= 5
        fives += 1
    places = max(twos, fives)
    if d == 1 and places <= 30:
        scaled = abs(value.numerator) * 10**places // value.denominator
        digits = str(scaled).rjust(places + 1, "0")
        sign = "-" if value < 0 else ""
        return f"{sign}{digits[:-places]}.{digits[-places:]}"
    return f"{value.numerator}/{value.denominator} (≈ {_approx(value, 12)})"


def _approx(value: Fraction, digits: int) -> str:
    # float() of a rational past 1e308 overflows: such values are written in scientific form from
    # the integers' own digits instead.
    try:
        return f"{float(value):.{digits}g}"
    except OverflowError:
        sign = "-" if value < 0 else ""
        whole = abs(value.numerator) // value.denominator
        text = str(whole)
        return f"{sign}{text[0]}.{text[1:digits]}e+{len(text) - 1}"


def evaluate_to_text(expression: str) -> dict:
    """`{"text": formatted value, "exact": bool}` or `{"error": message}`: what the worker answers."""
    try:
        value, exact = evaluate_ex(expression)
        return {"text": format_number(value, exact), "exact": exact}
    except CalcError as exc:
        return {"error": str(exc)}
    except RecursionError:
        return {"error": "expression nested too deeply"}
    except MemoryError:
        return {"error": "expression needs too much memory"}
    except (ValueError, OverflowError, ZeroDivisionError, TypeError) as exc:
        return {"error": f"cannot evaluate: {exc}"}


def _serve() -> None:
    """The worker: one request per stdin line, one answer per stdout line, until stdin closes."""
    import resource

    # Results are capped at 20000 bits (about 6000 digits): past Python's 4300-digit str() guard.
    sys.set_int_max_str_digits(0)
    limit = 1 << 30  # a bound on what one expression may allocate; the parent kills on time
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    for line in sys.stdin:
        try:
            request = json.loads(line)
            answer = evaluate_to_text(str(request["expression"]))
        except (ValueError, KeyError, TypeError) as exc:
            answer = {"error": f"bad request: {exc}"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    _serve()
