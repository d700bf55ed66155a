"""Behaviour rates in training's metrics: the envs' per-episode counts (reward_extra_info's
``behaviour_<count>`` columns, `EpisodeResult.behaviour_columns` in rollout/episode_result.py) pooled
into each env's declared rates."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from envs.baselines.behaviour import behaviour_rates_of, rates_from_means
from rollout.episode_result import EpisodeResult

# verl's validation metric of one reward_extra_info column: val-aux/<data source>/<column>/mean@<n>
_VAL_COUNT = re.compile(
    rf"val-aux/(?P<source>[^/]+)/{EpisodeResult.BEHAVIOUR_PREFIX}(?P<count>\w+)/mean@(?P<n>\d+)$"
)
GREEDY_SUFFIX = "@greedy"


def validation_behaviour(metrics: dict[str, Any]) -> dict[str, float]:
    """``val-aux/<source>/behaviour/<rate>`` for every source whose env declares behaviour rates.

    Args:
        metrics: A validation's metrics as verl returns them.

    Returns:
        The pooled rates (an empty dict when no env reported behaviour).

    >>> validation_behaviour({"val-aux/guess-number-v0/behaviour_followed/mean@1": 1.5,
    ...                       "val-aux/guess-number-v0/behaviour_after_feedback/mean@1": 2.0})
    {'val-aux/guess-number-v0/behaviour/follow_rate': 0.75}
    """
    means: dict[tuple[str, str], dict[str, float]] = {}
    for key, value in metrics.items():
        found = _VAL_COUNT.match(key)
        if found:
            means.setdefault((found["source"], found["n"]), {})[found["count"]] = float(value)
    out = {}
    for (source, _), counts in means.items():
        rates = rates_from_means(counts, behaviour_rates_of(source.removesuffix(GREEDY_SUFFIX)))
        out.update({f"val-aux/{source}/behaviour/{name}": rate for name, rate in rates.items()})
    return out


def batch_behaviour(extra_fields: Sequence[dict[str, Any] | None]) -> dict[str, float]:
    """``turngym/behaviour/<env id>/<rate>`` pooled over a training batch's episodes, per env.

    >>> columns = {"followed": 1.0, "after_feedback": 4.0}
    >>> batch_behaviour([EpisodeResult(env_id="guess-number-v0", behaviour_columns=columns).to_extra_fields()])
    {'turngym/behaviour/guess-number-v0/follow_rate': 0.25}
    """
    sums: dict[str, dict[str, float]] = {}
    for fields in extra_fields:
        if not isinstance(fields, dict) or not isinstance(fields.get(EpisodeResult.REWARD_INFO), dict):
            continue
        result = EpisodeResult.from_extra_fields(fields)
        env_sums = sums.setdefault(str(result.env_id), {})
        for count, value in result.behaviour_columns.items():
            env_sums[count] = env_sums.get(count, 0.0) + value
    out = {}
    for env_id, counts in sums.items():
        for name, rate in rates_from_means(counts, behaviour_rates_of(env_id)).items():
            out[f"turngym/behaviour/{env_id}/{name}"] = rate
    return out


_VAL_SUCCESS = re.compile(rf"val-aux/(?P<source>[^/]+)/{EpisodeResult.SUCCESS}/mean@\d+$")


def validation_success(metrics: dict[str, Any]) -> dict[str, float]:
    """{source: success rate} of one validation's metrics (verl's ``val-aux/<source>/success/mean@N``).

    >>> validation_success({"val-aux/g-v0/success/mean@1": 0.25, "val-core/g-v0/reward/mean@1": 0.1})
    {'g-v0': 0.25}
    """
    return {m["source"]: float(v) for k, v in metrics.items() if (m := _VAL_SUCCESS.match(k))}


def validation_source_lines(metrics: dict[str, Any]) -> list[str]:
    """One line per validation source: its success rate with the 95 % Wilson interval, and its behaviour.

    >>> validation_source_lines({"val-aux/g-v0/success/mean@1": 0.25, "val-aux/g-v0/behaviour/follow_rate": 0.5,
    ...                          "val-aux/turngym/episodes": 64.0})
    ['g-v0: success 25.0% (95% 16%-37%), follow 50%']
    """
    from envs.baselines.success_interval import wilson_interval

    episodes = int(metrics.get("val-aux/turngym/episodes", 0) or 0)
    successes = validation_success(metrics)
    lines = []
    for source, rate in successes.items():
        shown = f"{source}: success {rate:.1%}"
        if episodes and len(successes) == 1:  # the episode count is the whole validation's
            lo, hi = wilson_interval(rate, episodes)
            shown += f" (95% {lo:.0%}-{hi:.0%})"
        prefix = f"val-aux/{source}/behaviour/"
        rates = {k.removeprefix(prefix): float(v) for k, v in metrics.items() if k.startswith(prefix)}
        shown += "".join(f", {name.removesuffix('_rate')} {value:.0%}" for name, value in rates.items())
        lines.append(shown)
    return lines
