"""What an episode's play looked like: the counts an env reports in `info["behaviour"]`, pooled into rates.

An env that can tell how its actions used the feedback reports cumulative counts on every step
(`info["behaviour"]`, a dict of ints) and declares how they become rates in the class attribute
`behaviour_rates` (rate name -> (count, out of)). Rates are pooled over episodes (sum of counts over sum
of denominators), so an episode with many guesses weighs more than one with a single guess.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import lru_cache


def pool_behaviour(
    counts: Iterable[Mapping[str, int] | None], rates: Mapping[str, tuple[str, str]]
) -> dict[str, float]:
    """Pooled rates and per-episode means of behaviour counts.

    Args:
        counts: One dict of counts per episode (None for an episode whose env reported none).
        rates: Rate name -> (count key, denominator key), as an env's `behaviour_rates`.

    Returns:
        ``{rate: pooled value}`` for every rate with a non-zero denominator, plus
        ``{<count>_per_episode: mean}`` for every count key, over all episodes (None counts as zeros);
        {} when no episode reported counts.

    >>> pool_behaviour([{"followed": 1, "after_feedback": 2}, {"followed": 2, "after_feedback": 2}],
    ...                {"follow_rate": ("followed", "after_feedback")})
    {'follow_rate': 0.75, 'followed_per_episode': 1.5, 'after_feedback_per_episode': 2.0}
    """
    episodes = list(counts)
    reported = [c for c in episodes if c]
    if not reported:
        return {}
    totals: dict[str, float] = {}
    for episode in reported:
        for key, value in episode.items():
            totals[key] = totals.get(key, 0.0) + float(value)
    out = {name: totals[num] / totals[den] for name, (num, den) in rates.items() if totals.get(den)}
    # Per episode over every episode: one that never reported counts (no guess made) counts as zeros.
    out.update({f"{key}_per_episode": total / len(episodes) for key, total in totals.items()})
    return out


def behaviour_rates_of(env_id: str) -> dict[str, tuple[str, str]]:
    """The `behaviour_rates` the env registered as `env_id` declares ({} when none or unknown).

    >>> behaviour_rates_of("guess-number-v0")["follow_rate"]
    ('followed', 'after_feedback')
    """
    import envs

    try:
        env_class = envs.spec(env_id).load()
    except Exception:  # an id registered by a module this process has not imported: nothing to pool
        return {}
    return dict(getattr(env_class, "behaviour_rates", {}) or {})


@lru_cache(maxsize=1)
def behaviour_count_keys() -> tuple[str, ...]:
    """Every count any registered env's `behaviour_rates` names, sorted: one fixed set of per-episode
    columns for a training batch that mixes envs (verl needs the same keys on every row).

    >>> {"followed", "after_feedback"} <= set(behaviour_count_keys())
    True
    """
    import envs

    keys: set[str] = set()
    for spec in envs.list_envs():
        try:
            env_class = spec.load()
        except Exception:  # an env whose module fails to import reports nothing here; `make` says why
            continue
        for pair in (getattr(env_class, "behaviour_rates", None) or {}).values():
            keys.update(pair)
    return tuple(sorted(keys))


def rates_from_means(means: Mapping[str, float], rates: Mapping[str, tuple[str, str]]) -> dict[str, float]:
    """Pooled rates from per-episode mean counts (the ratio of the means is the ratio of the sums).

    >>> rates_from_means({"followed": 1.5, "after_feedback": 2.0}, {"follow_rate": ("followed", "after_feedback")})
    {'follow_rate': 0.75}
    """
    return {
        name: means[num] / means[den] for name, (num, den) in rates.items() if num in means and means.get(den)
    }
