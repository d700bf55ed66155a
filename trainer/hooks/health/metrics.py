"""Training health: per step, the numbers that say a run has gone silently useless.

``step_health`` turns one training step's episodes (their ``extra_fields`` from the rollout, their
scores and GRPO ``uid``), the count of rows with a non-finite advantage and verl's own step metrics
into ``health/<name>`` metrics. They go wherever the step's metrics go: metrics.jsonl, TensorBoard
and (some of them) the progress line; trainer/hooks/health/guards.py compares them with thresholds.

A metric that has nothing to measure in a step (no tool env, no group of two, no reference policy)
is left out rather than reported as 0. Rates over turns and episodes count only episodes that did not
fail; failed and replayed episodes are shares of all the step's episodes.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from rollout.episode_result import EpisodeResult

PREFIX = "health/"
GROUPS_ALL_EQUAL = "groups_all_equal"
FORMAT_ERROR_RATE = "format_error_rate"
VALID_TOOL_CALL_RATE = "valid_tool_call_rate"
EPISODES_CUT = "episodes_cut"
TURNS_CUT = "turns_cut"
RESPONSE_TOKENS = "response_tokens"
ENTROPY = "entropy"
KL = "kl"
EPISODES_FAILED = "episodes_failed"
EPISODES_REPLAYED = "episodes_replayed"
NONFINITE_REWARDS = "nonfinite_rewards"
NONFINITE_ADVANTAGES = "nonfinite_advantages"
TOKEN_DRIFT = "token_drift"
HEALTH_METRICS = (
    GROUPS_ALL_EQUAL,
    FORMAT_ERROR_RATE,
    VALID_TOOL_CALL_RATE,
    EPISODES_CUT,
    TURNS_CUT,
    RESPONSE_TOKENS,
    ENTROPY,
    KL,
    EPISODES_FAILED,
    EPISODES_REPLAYED,
    NONFINITE_REWARDS,
    NONFINITE_ADVANTAGES,
    TOKEN_DRIFT,
)

# Terminations that cut an episode before the env ended it (rollout/trajectory.py).
CUT_TERMINATIONS = ("budget", "context_overflow", "max_turns")
# The policy's token entropy, first found wins: verl's (its v1 trainer names the mean `actor/entropy_loss`,
# computed over the whole vocabulary when actor.calculate_entropy is on), else turngym's estimate from
# the sampled tokens (SAMPLED_ENTROPY_KEY, always there at no cost). KL to the reference, as a loss term
# (actor.use_kl_loss) or a reward penalty (algorithm.use_kl_in_reward).
SAMPLED_ENTROPY_KEY = "turngym/sampled_entropy"
ENTROPY_KEYS = ("actor/entropy", "actor/entropy_loss", SAMPLED_ENTROPY_KEY)
KL_KEYS = ("actor/kl_loss", "actor/reward_kl_penalty")
EQUAL_TOLERANCE = 1e-9


def metric_key(name: str) -> str:
    """The metrics-dict key of health metric `name`: ``health/<name>``."""
    return PREFIX + name


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number


def all_equal_share(scores: Sequence[float], uids: Sequence[Any]) -> float | None:
    """Share of groups (same uid, two or more finite scores) whose scores are all equal; None without one."""
    groups: dict[Any, list[float]] = defaultdict(list)
    for score, uid in zip(scores, uids, strict=True):
        if math.isfinite(score):
            groups[uid].append(score)
    spread = [max(g) - min(g) for g in groups.values() if len(g) >= 2]
    if not spread:
        return None
    return sum(s <= EQUAL_TOLERANCE for s in spread) / len(spread)


def step_health(
    extra_fields: Sequence[Mapping[str, Any] | None],
    scores: Sequence[float],
    uids: Sequence[Any] | None = None,
    nonfinite_advantage_rows: int | None = None,
    step_metrics: Mapping[str, Any] | None = None,
) -> dict[str, float]:
    """The step's ``health/*`` metrics.

    Args:
        extra_fields: per episode, the rollout's ``extra_fields`` (read as an `EpisodeResult`,
            rollout/episode_result.py); None or {} for an episode that reports nothing.
        scores: per episode, its return (the row sum of ``rm_scores``).
        uids: per episode, its GRPO group; None: no groups (``groups_all_equal`` is left out).
        nonfinite_advantage_rows: rows with a non-finite advantage (None: not known this step).
        step_metrics: verl's metrics of the step (``actor/entropy``, ``actor/kl_loss``, ...).

    Returns:
        ``{"health/<name>": value}`` for every metric the step can measure.

    Example:
        >>> fields = [EpisodeResult(assistant_turns=2, format_errors=1, termination="max_turns"),
        ...           EpisodeResult(failed=True)]
        >>> out = step_health([f.to_extra_fields() for f in fields], [0.0, 0.0])
        >>> out["health/format_error_rate"], out["health/episodes_cut"], out["health/episodes_failed"]
        (0.5, 1.0, 0.5)
    """
    results = [EpisodeResult.from_extra_fields(f) for f in extra_fields]
    scores = [float(s) for s in scores]
    if len(results) != len(scores):
        raise ValueError(f"{len(results)} episodes' extra_fields but {len(scores)} scores")
    out: dict[str, float] = {}
    total = len(results)
    failed = [r.failed for r in results]
    finite = [math.isfinite(s) for s in scores]
    if total:
        out[EPISODES_FAILED] = sum(failed) / total
        out[EPISODES_REPLAYED] = sum(r.replayed for r in results) / total
    out[NONFINITE_REWARDS] = float(total - sum(finite))
    if nonfinite_advantage_rows is not None:
        out[NONFINITE_ADVANTAGES] = float(nonfinite_advantage_rows)
    valid = [i for i in range(total) if not failed[i]]
    if uids is not None:
        share = all_equal_share([scores[i] for i in valid], [uids[i] for i in valid])
        if share is not None:
            out[GROUPS_ALL_EQUAL] = share
    out.update(_turn_rates([results[i] for i in valid]))
    out.update(_policy(step_metrics or {}))
    return {metric_key(k): v for k, v in out.items()}


def _turn_rates(results: list[EpisodeResult]) -> dict[str, float]:
    """Rates over the turns and episodes of the episodes that did not fail."""
    out: dict[str, float] = {}
    if not results:
        return out
    health = [r.health for r in results]
    turns = [float(r.assistant_turns or 0) for r in results]
    if sum(turns) > 0:
        out[FORMAT_ERROR_RATE] = sum(float(r.format_errors) for r in results) / sum(turns)
        out[TURNS_CUT] = sum(float(r.turns_cut) for r in results) / sum(turns)
    out[EPISODES_CUT] = sum(r.termination in CUT_TERMINATIONS for r in results) / len(results)
    tool_turns = [(h, t) for h, t in zip(health, turns, strict=True) if h.tool_env]
    if sum(t for _, t in tool_turns) > 0:
        out[VALID_TOOL_CALL_RATE] = sum(float(h.valid_tool_turns) for h, _ in tool_turns) / sum(
            t for _, t in tool_turns
        )
    reported = [(h, t) for h, t in zip(health, turns, strict=True) if h.drifted_turns is not None]
    if sum(t for _, t in reported) > 0:
        out[TOKEN_DRIFT] = sum(float(h.drifted_turns or 0) for h, _ in reported) / sum(t for _, t in reported)
    tokens = [float(h.generated_tokens) for h in health if h.generated_tokens is not None]
    if tokens:
        out[RESPONSE_TOKENS] = sum(tokens) / len(tokens)
    return out


def _policy(metrics: Mapping[str, Any]) -> dict[str, float]:
    """Entropy and KL from verl's step metrics, when verl computed them this step."""
    out: dict[str, float] = {}
    for name, keys in ((ENTROPY, ENTROPY_KEYS), (KL, KL_KEYS)):
        for key in keys:
            value = _number(metrics.get(key)) if key in metrics else None
            if value is not None:
                out[name] = value
                break
    return out
