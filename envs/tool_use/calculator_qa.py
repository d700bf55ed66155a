"""calculator-qa-v0: arithmetic and word problems too large to do in one's head; the calculator helps."""

from __future__ import annotations

from typing import Any

from envs.core.errors import InvalidOptions
from envs.tool_use.tool_qa import Question, ToolQAEnv, numbers_match


def _n(rng, low: int, high: int) -> int:
    return int(rng.integers(low, high + 1))


class CalculatorQAEnv(ToolQAEnv):
    """Exact answers to big-number arithmetic (easy), mixed expressions and percentages (medium) and
    multi-step word problems (hard), generated from the seed. Tools: `calculator` and `submit`."""

    tool_names = ("calculator",)
    difficulties = ("medium", "easy", "hard")
    reset_options = {"difficulty": ("easy", "medium", "hard"), "expression": str}

    def make_question(self, difficulty: str, options: dict[str, Any]) -> Question:
        """Draw a question; `options={"expression": ...}` poses that expression instead.

        A given expression is a client's: it is evaluated in a worker process killed after
        `EVAL_TIMEOUT_S`, and one that cannot be evaluated is refused as an invalid reset option.
        """
        from tools.builtin.calculator import CalcError, evaluate_bounded, evaluate_ex, format_number

        rng = self.np_random
        if "expression" in options:
            expr, text, kind = options["expression"], f"What is {options['expression']}?", "given"
            try:
                shown, _ = evaluate_bounded(expr)
            except CalcError as exc:
                raise InvalidOptions(
                    f"{type(self).__name__}: reset option 'expression' cannot be evaluated: {exc}"
                ) from None
        else:
            expr, text, kind = _generate(rng, difficulty)
            shown = format_number(*evaluate_ex(expr))
        answer = shown.split(" ")[0]
        return Question(text + " Give the exact value.", answer, [("calculator", {"expression": expr})], kind)

    def is_correct(self, given: str, expected: str) -> bool:
        """Numerically equal (fractions and decimals both count)."""
        return numbers_match(given, expected)

    def expert_answer(self) -> str:
        """What the calculator said last."""
        for m in reversed(self.transcript):
            if m.get("role") == "tool" and m.get("name") == "calculator":
                return m["content"].split(" ")[0]
        return self.question.answer


def _generate(rng, difficulty: str) -> tuple[str, str, str]:
    kind = int(rng.integers(3))
    if difficulty == "easy":
        if kind == 0:
            a, b = _n(rng, 1000, 99999), _n(rng, 1000, 9999)
            return f"{a} * {b}", f"What is {a:,} × {b:,}?", "product"
        if kind == 1:
            a, b, c = _n(rng, 100000, 999999), _n(rng, 100000, 999999), _n(rng, 10000, 99999)
            return f"{a} + {b} - {c}", f"What is {a:,} + {b:,} − {c:,}?", "sum"
        a, b = _n(rng, 100, 999), _n(rng, 10000, 99999)
        return f"{a * b} / {a}", f"What is {a * b:,} divided by {a}?", "division"
    if difficulty == "medium":
        if kind == 0:
            a, k = _n(rng, 11, 99), _n(rng, 5, 9)
            return f"{a}^{k}", f"What is {a} to the power {k}?", "power"
        if kind == 1:
            pct, base = _pick(rng, ("12.5", "17.5", "7.25", "33", "2.5")), _n(rng, 1000, 99999)
            return f"{pct} / 100 * {base}", f"What is {pct}% of {base:,}?", "percent"
        a, b, c, d = _n(rng, 100, 999), _n(rng, 100, 999), _n(rng, 10, 99), _n(rng, 1000, 9999)
        return f"({a} * {b} - {d}) * {c}", f"Compute ({a} × {b} − {d:,}) × {c}.", "mixed"
    if kind == 0:
        rate, hours, days, price = (
            _n(rng, 500, 2500),
            _n(rng, 8, 20),
            _n(rng, 15, 30),
            _pick(rng, ("4.75", "12.25", "3.5", "19.99")),
        )
        return (
            f"{rate} * {hours} * {days} * {price}",
            f"A factory makes {rate:,} widgets an hour, {hours} hours a day, for {days} days. Each widget sells "
            f"for ${price}. How many dollars does it take in?",
            "revenue",
        )
    if kind == 1:
        principal, pct, years = _n(rng, 10, 90) * 1000, _pick(rng, ("2", "3", "4", "5", "6")), _n(rng, 2, 5)
        return (
            f"{principal} * (1 + {pct}/100)^{years}",
            f"${principal:,} is invested at {pct}% interest compounded once a year. What is it worth after "
            f"{years} years (exactly, no rounding)?",
            "interest",
        )
    n, k = _n(rng, 20, 60), _n(rng, 3, 8)
    return (
        f"factorial({n}) / (factorial({k}) * factorial({n - k}))",
        f"In how many ways can {k} people be chosen from {n}?",
        "combinations",
    )


def _pick(rng, options: tuple[str, ...]) -> str:
    return options[int(rng.integers(len(options)))]
