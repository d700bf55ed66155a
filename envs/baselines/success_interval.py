"""The 95 % Wilson score interval of a success rate: how far a rate on a few dozen episodes can be trusted."""

from __future__ import annotations

import math


def wilson_interval(rate: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval of a success rate measured on `n` episodes.

    Args:
        rate: The measured share of successes, in [0, 1].
        n: Episodes it was measured on; (0.0, 1.0) when there were none.
        z: The normal quantile (1.96 for 95 %).

    Returns:
        (low, high), both in [0, 1].

    >>> [round(x, 3) for x in wilson_interval(6 / 64, 64)]
    [0.044, 0.19]
    """
    if n <= 0:
        return 0.0, 1.0
    centre = (rate + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(rate * (1 - rate) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)
