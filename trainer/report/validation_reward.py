"""Validation reward per way of playing: sampled (verl's ``val_kwargs``) and greedy (``<env id>@greedy``).

With ``turngym.val_greedy=true`` every held-out seed is played twice, and verl reports each under its own
data source. The step line and the reward plot averaged all ``val-core/*reward*`` keys into one
"validation reward", sampled and greedy play mixed without saying so; here they stay apart, each the mean
over the envs of ``val-core/<source>/reward/mean@N``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from rollout.episode_row import EpisodeRow

PREFIX = "val-core/"
SAMPLED, GREEDY = "sampled", "greedy"


def validation_rewards(metrics: Mapping[str, Any]) -> dict[str, tuple[float, int]]:
    """The validation reward of sampled and of greedy play in one metrics record.

    Args:
        metrics: one step's or validation's metrics (verl's names).

    Returns:
        ``{"sampled": (mean, envs), "greedy": (mean, envs)}``, each the mean of the envs' mean rewards and
        how many envs it averages; a way of playing without metrics is left out.

    Example:
        >>> validation_rewards({"val-core/g-v0/reward/mean@1": 0.2, "val-core/g-v0@greedy/reward/mean@1": 0.8,
        ...     "val-core/w-v0/reward/mean@1": 0.4})
        {'sampled': (0.30000000000000004, 2), 'greedy': (0.8, 1)}
    """
    found: dict[str, list[float]] = {}
    for key, value in metrics.items():
        if not key.startswith(PREFIX):
            continue
        parts = key[len(PREFIX) :].rsplit("/", 2)
        if len(parts) != 3 or parts[1] != "reward" or not parts[2].startswith("mean@"):
            continue
        try:
            number = float(value)
        except (TypeError, ValueError):
            continue
        if not math.isfinite(number):
            continue
        way = GREEDY if parts[0].endswith(EpisodeRow.GREEDY_SUFFIX) else SAMPLED
        found.setdefault(way, []).append(number)
    return {way: (sum(v) / len(v), len(v)) for way in (SAMPLED, GREEDY) if (v := found.get(way))}


def describe(way: str, envs: int) -> str:
    """A legend or line label: ``validation reward, greedy (mean over 4 envs)``."""
    over = f" (mean over {envs} envs)" if envs > 1 else ""
    return f"validation reward, {way}{over}"
