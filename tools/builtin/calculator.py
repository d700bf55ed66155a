"""`calculator`: exact arithmetic on rationals (`tools.builtin.arithmetic`), evaluated in a worker process.

Some expressions pass every size check and still take minutes (`round(1/3, 10**7)` about 7 s, 10**8
minutes: the cost grows about N^1.6), and an `async def run` that computed them on the event loop froze
every episode and a served env's `/health` with it. Each expression is therefore evaluated by a worker
process (`tools.killable_worker`) that is killed when the call's time is up; the loop only waits on a
pipe. `evaluate_bounded` is the same for code that is off the loop (calculator-qa's reset). The workers
of one process are capped (`$TURNGYM_TOOL_WORKERS`, default max(4, CPU count)), however many calls run
at once; a call that finds them all busy until its time is up is told so.
"""

from __future__ import annotations

import os

import pydantic

from tools.builtin import arithmetic
from tools.builtin.arithmetic import CalcError, evaluate, evaluate_ex, format_number
from tools.killable_worker import WorkerBusy, WorkerFailed, WorkerPool, WorkerTimeout
from tools.result import ToolResult
from tools.tool import Tool

__all__ = ["CalcError", "Calculator", "evaluate", "evaluate_bounded", "evaluate_ex", "format_number"]

#: Seconds one expression may take in the worker before it is killed.
EVAL_TIMEOUT_S = 5.0
_pool = WorkerPool(os.path.abspath(arithmetic.__file__))


def _text(answer: dict) -> tuple[str, bool]:
    if "error" in answer:
        raise CalcError(str(answer["error"]))
    return str(answer["text"]), bool(answer.get("exact", True))


def _slow(timeout_s: float) -> CalcError:
    return CalcError(
        f"the expression took longer than {timeout_s:g} s and was stopped; split it into smaller steps"
    )


def _busy(timeout_s: float) -> CalcError:
    return CalcError(
        f"every calculator worker of this server stayed busy for {timeout_s:g} s (it runs at most "
        f"{_pool.max_workers} at once); try again"
    )


def evaluate_bounded(expression: str, timeout_s: float = EVAL_TIMEOUT_S) -> tuple[str, bool]:
    """(formatted value, exact) of `expression`, computed in a worker killed after `timeout_s` (blocking).

    Args:
        expression: The arithmetic expression.
        timeout_s: Seconds the worker may take.

    Returns:
        The value as `format_number` writes it, and whether it is exact.

    Raises:
        CalcError: the expression is wrong, too large, took longer than `timeout_s`, or no worker was
            free within it.
    """
    try:
        return _text(_pool.run({"expression": expression}, timeout_s))
    except WorkerBusy:
        raise _busy(timeout_s) from None
    except WorkerTimeout:
        raise _slow(timeout_s) from None
    except WorkerFailed as exc:
        raise CalcError(f"the evaluation failed ({exc}); try a smaller expression") from None


class Calculator(Tool):
    """Exact arithmetic: + - * / // % ** (or ^), parentheses, and a few functions."""

    name = "calculator"
    description = (
        "Evaluate an arithmetic expression exactly (rational arithmetic). Supports + - * / // % ** ^, "
        "parentheses, pi, e and abs, sqrt, floor, ceil, round, min, max, gcd, lcm, factorial, log, exp, sin, cos, tan."
    )
    timeout_s = 5.0
    concurrent = True

    class Args(pydantic.BaseModel):
        model_config = pydantic.ConfigDict(extra="forbid")
        expression: str = pydantic.Field(description="The expression, e.g. `(2**10 - 1) / 3`.")

    async def run(self, args: Args, context: dict | None) -> ToolResult:
        # A little under the call's own timeout, so the model reads why rather than a bare "timed out".
        budget = EVAL_TIMEOUT_S if self.timeout_s is None else self.timeout_s - min(0.5, self.timeout_s / 4)
        try:
            text, _ = _text(await _pool.arun({"expression": args.expression}, budget))
        except WorkerBusy:
            return ToolResult.error(f"calculator: {_busy(budget)}")
        except WorkerTimeout:
            return ToolResult.error(f"calculator: {_slow(budget)}")
        except WorkerFailed as exc:
            return ToolResult.error(f"calculator: the evaluation failed ({exc}); try a smaller expression")
        except CalcError as exc:
            return ToolResult.error(f"calculator: {exc}")
        return ToolResult(text)
