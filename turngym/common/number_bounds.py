"""What a number that enters from outside may be: a whole number or any number, finite, between two bounds.

One type for every table of bounds: the trainer's command-line keys (``trainer/checks/number_checks.py``), the
env constructors' numbers (``envs/core/number_bounds.py``) and the model server's sampling parameters
(``turngym/engines/engine.py``). A bound says what it accepts in words, so every refusal is one line that names
the key, the value and what to give instead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Bound:
    """What one number accepts: a whole number or any number, from ``low`` to ``high`` (inclusive unless
    ``open_low``), null when ``nullable``, 0 as well when ``zero`` (greedy sampling below a floor), and the
    words in ``words`` (``auto``). Booleans, NaN and infinities are never numbers here.

    Example:
        >>> Bound(whole=False, low=0.01, high=100, zero=True).problem("temperature", 1e-300)
        'temperature=1e-300 is out of range; give a number in [0.01, 100] (or 0)'
        >>> Bound(whole=True, low=1).problem("max_turns", True)
        'max_turns=True is not a number; give a whole number >= 1'
    """

    whole: bool
    low: float | None = None
    high: float | None = None
    open_low: bool = False
    nullable: bool = False
    words: tuple[str, ...] = ()
    zero: bool = False

    def describe(self) -> str:
        """``a whole number >= 1``, ``a number in (0, 1]``, ... for the message."""
        kind = "a whole number" if self.whole else "a number"
        low, high = _plain(self.low), _plain(self.high)
        if self.low is not None and self.high is not None:
            text = f"{kind} in {'(' if self.open_low else '['}{low}, {high}]"
        elif self.low is not None:
            text = f"{kind} {'>' if self.open_low else '>='} {low}"
        elif self.high is not None:
            text = f"{kind} <= {high}"
        else:
            text = kind
        extras = [*(["0"] if self.zero else []), *self.words, *(["null"] if self.nullable else [])]
        return text + (f" (or {', '.join(extras)})" if extras else "")

    def problem(self, name: str, value: Any) -> str | None:
        """None when ``value`` is accepted, else one line naming ``name``, the value and what to give.

        Args:
            name: what the value is called where it was given (a key, a keyword, a field).
            value: the value as it arrived.

        Returns:
            None, or the refusal (no newline).
        """
        if value is None:
            return None if self.nullable else f"{name}=null: give {self.describe()}"
        if isinstance(value, str) and value in self.words:
            return None
        shown = f"{name}={shown_value(value)}"
        if not is_number(value) or (isinstance(value, float) and not math.isfinite(value)):
            return f"{shown} is not a number; give {self.describe()}"
        if self.whole and not isinstance(value, int):
            return f"{shown} is not a whole number; give {self.describe()}"
        if self.zero and value == 0:
            return None
        low, high = self.low, self.high
        too_low = low is not None and (value <= low if self.open_low else value < low)
        if too_low or (high is not None and value > high):
            return f"{shown} is out of range; give {self.describe()}"
        return None


def _plain(bound: float | None) -> str:
    # 2**63 - 1 and 1000000 as written, not 9.22337e+18 and 1e+06; fractions as %g.
    if bound is None:
        return ""
    if float(bound).is_integer() and abs(bound) < 1e19:
        return str(int(bound))
    return f"{bound:g}"


def is_number(value: Any) -> bool:
    """An int or a float, not a bool (``True`` is an int to Python, never a number to a bound)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def shown_value(value: Any, limit: int = 40) -> str:
    """``value`` for a one-line message: strings quoted, anything longer than ``limit`` characters cut.

    >>> shown_value(2**200)
    '1606938044258990275541962092341162602...'
    """
    try:
        text = repr(value) if isinstance(value, str) else str(value)
    except ValueError:  # an int past Python's digit limit for str()
        return "a number too long to show"
    text = text.replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 3] + "..."
