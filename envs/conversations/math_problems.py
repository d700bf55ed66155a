"""Procedurally generated arithmetic and word problems, with hints and worked solutions, in three tiers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

DIFFICULTIES = ("easy", "medium", "hard")
_NAMES = ("Mia", "Sam", "Ava", "Leo", "Noah", "Zoe", "Omar", "Lina", "Ravi", "Emma")
_ITEMS = ("apples", "marbles", "stickers", "books", "cards", "shells")


@dataclass
class MathProblem:
    """A question, its answer (int or a fraction string), graded hints and a worked solution."""

    question: str
    answer: int | str
    hints: list[str] = field(default_factory=list)
    solution: str = ""
    kind: str = ""


def _int(rng: np.random.Generator, low: int, high: int) -> int:
    return int(rng.integers(low, high + 1))


def _pick(rng: np.random.Generator, options: tuple[str, ...]) -> str:
    return options[int(rng.integers(len(options)))]


# ----- easy ------------------------------------------------------------------------------------------
def add_sub(rng: np.random.Generator) -> MathProblem:
    a, b = _int(rng, 10, 99), _int(rng, 10, 99)
    if rng.random() < 0.5:
        return MathProblem(
            f"What is {a} + {b}?",
            a + b,
            ["Add the tens, then the ones.", f"{a} + {b} = {a + b - b % 10} + {b % 10}."],
            f"{a} + {b} = {a + b}.",
            "add",
        )
    a, b = max(a, b), min(a, b)
    return MathProblem(
        f"What is {a} - {b}?",
        a - b,
        [
            "Subtract the tens, then the ones.",
            f"{a} - {b - b % 10} = {a - b + b % 10}, then take away {b % 10}.",
        ],
        f"{a} - {b} = {a - b}.",
        "subtract",
    )


def small_product(rng: np.random.Generator) -> MathProblem:
    a, b = _int(rng, 2, 9), _int(rng, 11, 49)
    return MathProblem(
        f"What is {a} × {b}?",
        a * b,
        [f"Split {b} into {b - b % 10} + {b % 10}.", f"{a} × {b - b % 10} = {a * (b - b % 10)}."],
        f"{a} × {b} = {a} × {b - b % 10} + {a} × {b % 10} = {a * b}.",
        "multiply",
    )


def gather(rng: np.random.Generator) -> MathProblem:
    name, item = _pick(rng, _NAMES), _pick(rng, _ITEMS)
    a, b, c = _int(rng, 5, 30), _int(rng, 2, 20), _int(rng, 1, 5)
    c = min(c, a + b)
    return MathProblem(
        f"{name} has {a} {item}, finds {b} more and gives {c} away. How many {item} does {name} have now?",
        a + b - c,
        ["Add what was found, then subtract what was given away.", f"{a} + {b} = {a + b}."],
        f"{a} + {b} - {c} = {a + b - c}.",
        "word-gather",
    )


# ----- medium ----------------------------------------------------------------------------------------
def precedence(rng: np.random.Generator) -> MathProblem:
    a, b, c, d = _int(rng, 2, 40), _int(rng, 2, 12), _int(rng, 2, 12), _int(rng, 1, 30)
    return MathProblem(
        f"Compute {a} + {b} × {c} - {d}.",
        a + b * c - d,
        ["Multiplication comes before addition and subtraction.", f"{b} × {c} = {b * c}."],
        f"{b} × {c} = {b * c}; {a} + {b * c} - {d} = {a + b * c - d}.",
        "precedence",
    )


def shopping(rng: np.random.Generator) -> MathProblem:
    name = _pick(rng, _NAMES)
    p1, p2, n1, n2 = _int(rng, 2, 15), _int(rng, 1, 9), _int(rng, 2, 8), _int(rng, 2, 9)
    total = p1 * n1 + p2 * n2
    return MathProblem(
        f"A notebook costs ${p1} and a pen costs ${p2}. {name} buys {n1} notebooks and {n2} pens. "
        "How many dollars does that cost in total?",
        total,
        [
            "Work out the notebooks and the pens separately, then add.",
            f"The notebooks cost {n1} × {p1} = {p1 * n1}.",
        ],
        f"{n1} × {p1} + {n2} × {p2} = {p1 * n1} + {p2 * n2} = {total}.",
        "word-shopping",
    )


def distance(rng: np.random.Generator) -> MathProblem:
    v1, t1, v2, t2 = _int(rng, 3, 12) * 10, _int(rng, 2, 5), _int(rng, 3, 12) * 10, _int(rng, 1, 4)
    total = v1 * t1 + v2 * t2
    return MathProblem(
        f"A train travels at {v1} km/h for {t1} hours, then at {v2} km/h for {t2} hours. "
        "How many kilometres does it travel in total?",
        total,
        [
            "Distance = speed × time, for each part of the trip.",
            f"The first part is {v1} × {t1} = {v1 * t1} km.",
        ],
        f"{v1} × {t1} + {v2} × {t2} = {v1 * t1} + {v2 * t2} = {total}.",
        "word-distance",
    )


# ----- hard ------------------------------------------------------------------------------------------
def discount(rng: np.random.Generator) -> MathProblem:
    price = _int(rng, 4, 40) * 20
    pct = _pick(rng, ("10", "15", "20", "25", "30", "40", "50"))
    qty = _int(rng, 2, 4)
    unit = price * (100 - int(pct)) // 100
    return MathProblem(
        f"A jacket costs ${price}. It is on sale at {pct}% off. How many dollars do {qty} jackets cost on sale?",
        unit * qty,
        [
            f"First find {pct}% of {price}.",
            f"One jacket on sale costs {price} - {price * int(pct) // 100} = {unit}.",
        ],
        f"{pct}% of {price} is {price * int(pct) // 100}; one costs {unit}; {qty} cost {unit * qty}.",
        "word-discount",
    )


def ages(rng: np.random.Generator) -> MathProblem:
    a, b = _pick(rng, _NAMES[:5]), _pick(rng, _NAMES[5:])
    young, k, years = _int(rng, 3, 15), _int(rng, 2, 4), _int(rng, 2, 10)
    total = (k + 1) * young + 2 * years
    return MathProblem(
        f"{a} is {k} times as old as {b}. In {years} years their ages will add up to {total}. How old is {b} now?",
        young,
        [
            f"Call {b}'s age x; then {a} is {k}x.",
            f"In {years} years: x + {years} + {k}x + {years} = {total}.",
        ],
        f"{k + 1}x + {2 * years} = {total}, so x = {young}.",
        "word-ages",
    )


def fractions(rng: np.random.Generator) -> MathProblem:
    b, d = _int(rng, 2, 9), _int(rng, 2, 9)
    a, c = _int(rng, 1, b - 1) if b > 2 else 1, _int(rng, 1, d - 1) if d > 2 else 1
    total = Fraction(a, b) + Fraction(c, d)
    shown = str(total.numerator) if total.denominator == 1 else f"{total.numerator}/{total.denominator}"
    common = b * d // np.gcd(b, d)
    return MathProblem(
        f"What is {a}/{b} + {c}/{d}? Give the answer as a fraction in lowest terms.",
        shown,
        [
            f"Use the common denominator {common}.",
            f"{a}/{b} = {a * common // b}/{common} and {c}/{d} = {c * common // d}/{common}.",
        ],
        f"{a * common // b}/{common} + {c * common // d}/{common} = {shown}.",
        "fractions",
    )


GENERATORS: dict[str, tuple[Callable[[np.random.Generator], MathProblem], ...]] = {
    "easy": (add_sub, small_product, gather),
    "medium": (precedence, shopping, distance),
    "hard": (discount, ages, fractions),
}


def generate(rng: np.random.Generator, difficulty: str) -> MathProblem:
    """A random problem of the given tier, drawn only from `rng`."""
    if difficulty not in GENERATORS:
        raise ValueError(f"unknown difficulty {difficulty!r}; choose from {list(DIFFICULTIES)}")
    makers = GENERATORS[difficulty]
    return makers[int(rng.integers(len(makers)))](rng)
