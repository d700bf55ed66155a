"""What repo-fix-v0 builds repositories from: template modules, their functions' input generators, and bugs.

The correct module sources are the files in `envs/repo_fix/templates/`. A bug is a text edit (`old` ->
`new`, `old` occurring exactly once in its module) that changes what one function computes. Inputs are
drawn from a numpy Generator so an episode's seed fixes them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

_TEMPLATES = Path(__file__).with_name("templates")

Inputs = Callable[[np.random.Generator], tuple]


def _int(rng: np.random.Generator, low: int, high: int) -> int:
    return int(rng.integers(low, high + 1))


def _ints(rng: np.random.Generator, n_low: int, n_high: int, low: int, high: int) -> list[int]:
    return [_int(rng, low, high) for _ in range(_int(rng, n_low, n_high))]


_WORDS = (
    "alpha",
    "beta",
    "gamma",
    "delta",
    "apple",
    "pear",
    "plum",
    "fig",
    "kiwi",
    "lime",
    "rust",
    "gold",
    "iron",
    "oak",
    "elm",
    "ash",
    "north",
    "south",
    "east",
    "west",
    "red",
    "blue",
    "green",
    "amber",
    "river",
    "stone",
    "cloud",
    "storm",
)
_SEPARATORS = (" ", "  ", ", ", "-", "_", "! ", " & ", ". ", "\t")


def _phrase(rng: np.random.Generator, n_low: int = 1, n_high: int = 4) -> str:
    words = []
    for _ in range(_int(rng, n_low, n_high)):
        word = _WORDS[_int(rng, 0, len(_WORDS) - 1)]
        if rng.random() < 0.3:
            word = word.capitalize()
        if rng.random() < 0.2:
            word += str(_int(rng, 0, 99))
        words.append(word)
    text = words[0]
    for word in words[1:]:
        text += _SEPARATORS[_int(rng, 0, len(_SEPARATORS) - 1)] + word
    if rng.random() < 0.3:
        text = _SEPARATORS[_int(rng, 0, len(_SEPARATORS) - 1)] + text
    if rng.random() < 0.4:
        text += ("!", "?", " ", ".", "")[_int(rng, 0, 4)]
    return text


def _items(rng: np.random.Generator) -> list[tuple[int, int]]:
    return [(_int(rng, 1, 5000), _int(rng, 0, 9)) for _ in range(_int(rng, 1, 5))]


def _year(rng: np.random.Generator) -> int:
    return int(rng.choice([1900, 2000, 2100, 2400, 1996, 2024, 2023, 1800, _int(rng, 1583, 2999)]))


#: module -> (modules it imports, {function: input generator})
MODULES: dict[str, tuple[tuple[str, ...], dict[str, Inputs]]] = {
    "mathutil": (
        (),
        {
            "clamp": lambda r: (_int(r, -50, 150), _int(r, -10, 20), _int(r, 30, 100)),
            "mean": lambda r: (_ints(r, 1, 6, -100, 100),),
            "percent_of": lambda r: (_int(r, 0, 10000), _int(r, 0, 100)),
        },
    ),
    "money": (
        ("mathutil",),
        {
            "apply_discount": lambda r: (_int(r, 1, 10000), _int(r, -20, 120)),
            "add_tax": lambda r: (_int(r, 1, 10000), _int(r, 0, 30)),
            "split_evenly": lambda r: (_int(r, 0, 1000), _int(r, 1, 7)),
        },
    ),
    "cart": (
        ("money",),
        {
            "line_total": lambda r: (_int(r, 1, 5000), _int(r, 0, 9)),
            "cart_total": lambda r: (_items(r),),
            "checkout": lambda r: (_items(r), _int(r, 0, 50), _int(r, 0, 25)),
            "split_bill": lambda r: (_items(r), _int(r, 1, 6)),
        },
    ),
    "textutil": (
        (),
        {
            "slugify": lambda r: (_phrase(r),),
            "truncate": lambda r: (_phrase(r, 1, 5), _int(r, 3, 20)),
            "word_count": lambda r: (_phrase(r, 1, 6),),
        },
    ),
    "records": (
        ("textutil",),
        {
            "parse_line": lambda r: (
                ",".join(
                    (" " * _int(r, 0, 2)) + _phrase(r, 1, 2).strip() + (" " * _int(r, 0, 2))
                    for _ in range(_int(r, 1, 4))
                ),
            ),
            "index_by_slug": lambda r: ([_phrase(r, 1, 2) for _ in range(_int(r, 1, 5))],),
            "short_names": lambda r: ([_phrase(r, 1, 3) for _ in range(_int(r, 1, 5))], _int(r, 4, 12)),
            "parse_table": lambda r: (
                "\n".join(
                    ",".join(
                        " " * _int(r, 0, 2) + _phrase(r, 1, 2).strip() + " " * _int(r, 0, 2) for _ in range(3)
                    )
                    for _ in range(_int(r, 1, 3))
                ),
            ),
            "total_words": lambda r: ([_phrase(r, 1, 4) for _ in range(_int(r, 1, 4))],),
        },
    ),
    "stats": (
        ("mathutil",),
        {
            "median": lambda r: (_ints(r, 1, 7, -50, 50),),
            "moving_average": lambda r: (_ints(r, 3, 8, -20, 20), _int(r, 1, 3)),
            "histogram": lambda r: (_ints(r, 1, 10, 0, 12), _int(r, 2, 5), 0, 10),
            "summary": lambda r: (_ints(r, 1, 7, -50, 50),),
            "peak_average": lambda r: (_ints(r, 3, 8, -20, 20), _int(r, 1, 3)),
        },
    ),
    "dates": (
        (),
        {
            "is_leap": lambda r: (_year(r),),
            "days_in_month": lambda r: (_year(r), _int(r, 1, 12)),
            "day_of_year": lambda r: (_year(r), _int(r, 1, 12), _int(r, 1, 28)),
        },
    ),
}


@dataclass(frozen=True)
class Bug:
    """A text edit that breaks `function` in `module`; the fix is the edit undone."""

    module: str
    function: str
    old: str
    new: str


BUGS: tuple[Bug, ...] = (
    Bug(
        "mathutil",
        "clamp",
        "    if value > high:\n        return high",
        "    if value > high:\n        return low",
    ),
    Bug("mathutil", "mean", "sum(values) / len(values)", "sum(values) / (len(values) + 1)"),
    Bug("mathutil", "percent_of", "amount * pct // 100", "amount // 100 * pct"),
    Bug("money", "apply_discount", "mathutil.clamp(pct, 0, 100)", "mathutil.clamp(pct, 0, 99)"),
    Bug("money", "add_tax", "(price * rate_pct + 50) // 100", "price * rate_pct // 100"),
    Bug("money", "split_evenly", "base + 1 if i < extra else base", "base + 1 if i <= extra else base"),
    Bug("cart", "line_total", "return price * quantity", "return price * max(quantity, 1)"),
    Bug("cart", "cart_total", "total += line_total(price, quantity)", "total = line_total(price, quantity)"),
    Bug(
        "cart",
        "checkout",
        "money.apply_discount(cart_total(items), discount_pct)",
        "money.apply_discount(cart_total(items), tax_pct)",
    ),
    Bug("textutil", "slugify", "    if current:\n        words.append(current)\n    return", "    return"),
    Bug("textutil", "truncate", "if len(text) <= width:", "if len(text) < width:"),
    Bug("textutil", "word_count", "len(text.split())", 'len(text.split(" "))'),
    Bug("records", "parse_line", "field.strip() for field", "field.lstrip() for field"),
    Bug(
        "records",
        "index_by_slug",
        "        if key not in index:\n            index[key] = name",
        "        index[key] = name",
    ),
    Bug("records", "short_names", "for name in names), key=str.lower)", "for name in names))"),
    Bug("stats", "median", "ordered = sorted(values)", "ordered = list(values)"),
    Bug("stats", "moving_average", "range(len(values) - window + 1)", "range(len(values) - window)"),
    Bug("stats", "histogram", "mathutil.clamp(slot, 0, buckets - 1)", "mathutil.clamp(slot, 0, buckets)"),
    Bug("dates", "is_leap", " and (year % 100 != 0 or year % 400 == 0)", " and year % 100 != 0"),
    Bug("dates", "days_in_month", "month in (4, 6, 9, 11)", "month in (4, 6, 9)"),
    Bug("dates", "day_of_year", "for m in range(1, month)", "for m in range(2, month)"),
)


@cache
def template_source(module: str) -> str:
    """The correct source of a template module."""
    return (_TEMPLATES / f"{module}.py").read_text(encoding="utf-8")


def closure(modules: set[str] | list[str] | tuple[str, ...]) -> list[str]:
    """`modules` plus every module they import, dependencies first (stable order)."""
    wanted: set[str] = set()
    stack = list(modules)
    while stack:
        name = stack.pop()
        if name not in wanted:
            wanted.add(name)
            stack.extend(MODULES[name][0])
    order: list[str] = []

    def visit(name: str) -> None:
        if name in order:
            return
        for dep in MODULES[name][0]:
            visit(dep)
        order.append(name)

    for name in MODULES:
        if name in wanted:
            visit(name)
    return order


def dependents(module: str) -> list[str]:
    """Modules that import `module`, directly or through others."""
    return [m for m in MODULES if m != module and module in closure([m])]


def check_catalogue() -> list[str]:
    """Problems with the catalogue (each bug's `old` must occur exactly once in its module); [] when sound."""
    problems = []
    for bug in BUGS:
        count = template_source(bug.module).count(bug.old)
        if count != 1:
            problems.append(f"{bug.module}.{bug.function}: `old` occurs {count} times")
        if bug.function not in MODULES[bug.module][1]:
            problems.append(f"{bug.module}.{bug.function}: no such function in the catalogue")
    return problems


def call_in_process(modules: dict[str, Any], module: str, function: str, args: tuple) -> tuple[bool, Any]:
    """(True, result) or (False, exception type name) of a trusted template function (never model code)."""
    try:
        return True, getattr(modules[module], function)(*args)
    except Exception as exc:  # noqa: BLE001 - an injected bug may raise; that is its behaviour
        return False, type(exc).__name__
