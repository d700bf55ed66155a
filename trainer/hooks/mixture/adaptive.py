"""A mixture that spends compute where it teaches: the envs' shares of training episodes follow how much
their recent groups could teach, within a floor and a cap.

A GRPO group teaches only when its samples score differently. An env whose groups are all flat (every
sample lost, or every one won) costs its episodes and gives nothing back, while one near a 50 % pass
rate gives the most. So each env has a *teaching score* in [0, 1], smoothed over steps:

    score = (1 - pass_weight) x (1 - flat-group rate) + pass_weight x 4 p (1 - p)

with p the env's pass rate at the step (4 p (1 - p) is 1 at p = 1/2 and 0 at 0 or 1). An env's weight
is its configured weight times its score, normalised, then held within [floor, cap]; every env keeps
at least the floor, so one that cannot teach yet is still tried and can come back. A row's env is drawn
from its seed against the weights (the same state gives the same pick in any process, and a row's GRPO
samples stay one episode).

This module is the schedule alone (no verl, no envs); the hook into verl's trainer is
``trainer.hooks.mixture.hook``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainer.hooks.curriculum.schedule import unit_draw
from trainer.run_folder.files import load_json_state, save_json_state

STATE_FILE = "mixture.json"
STATE_VERSION = 1
METRIC_PREFIX = "mixture"
# The draw's namespace, so a row's env pick is independent of the curriculum's level pick.
DRAW_NAME = "mixture"
SCORE_FLOOR = 1e-3


@dataclass(frozen=True)
class MixtureConfig:
    """``turngym.mixture``: the off switch, the bounds of a weight and how the score is formed."""

    enable: bool = False
    floor: float = 0.1
    cap: float = 0.5
    smoothing: float = 0.5
    pass_weight: float = 0.5
    seed: int = 0

    def __post_init__(self) -> None:
        problems = []
        if not 0.0 <= self.floor < self.cap <= 1.0:
            problems.append(f"need 0 <= floor < cap <= 1 (got floor={self.floor}, cap={self.cap})")
        if not 0.0 < self.smoothing <= 1.0:
            problems.append(f"smoothing must be in (0, 1], the new step's share (got {self.smoothing})")
        if not 0.0 <= self.pass_weight <= 1.0:
            problems.append(f"pass_weight must be in [0, 1] (got {self.pass_weight})")
        if problems:
            raise ValueError("turngym.mixture: " + "; ".join(problems))

    def check_envs(self, count: int) -> None:
        """Refuse bounds no mixture of `count` envs can meet (floors summing past 1, caps short of 1)."""
        if count and (self.floor * count > 1.0 + 1e-9 or self.cap * count < 1.0 - 1e-9):
            raise ValueError(
                f"turngym.mixture: floor={self.floor} and cap={self.cap} cannot hold {count} envs' weights "
                f"(need floor x {count} <= 1 <= cap x {count})"
            )

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any] | None) -> MixtureConfig:
        """Build from the ``turngym.mixture`` node (a DictConfig or a dict); unknown keys are refused.

        >>> MixtureConfig.from_mapping({"enable": True, "floor": 0.05}).floor
        0.05
        """
        values = dict(values or {})
        unknown = set(values) - set(cls.__dataclass_fields__)
        if unknown:
            raise ValueError(f"turngym.mixture: unknown keys {sorted(unknown)}")
        out: dict[str, Any] = {}
        for key, value in values.items():
            if key == "enable":
                out[key] = bool(value)
                continue
            number = int(value) if key == "seed" else float(value)
            if isinstance(number, float) and not math.isfinite(number):
                raise ValueError(f"turngym.mixture: {key}={value} is not a finite number")
            out[key] = number
        return cls(**out)


def bounded_weights(raw: Mapping[str, float], floor: float, cap: float) -> dict[str, float]:
    """`raw` normalised to sum 1 with every weight in [floor, cap] (clamped ones fixed, the rest rescaled).

    Args:
        raw: non-negative weights by name (all zero: equal weights).
        floor: the least weight any name keeps.
        cap: the most weight any name gets.

    Returns:
        The bounded weights, summing to 1.

    >>> bounded_weights({"a": 8.0, "b": 1.0, "c": 1.0}, floor=0.1, cap=0.5)
    {'a': 0.5, 'b': 0.25, 'c': 0.25}
    >>> bounded_weights({"a": 1.0, "b": 0.0}, floor=0.2, cap=1.0)
    {'a': 0.8, 'b': 0.2}
    >>> bounded_weights({"a": 1.0, "b": 0.0}, floor=0.1, cap=0.5)  # b at the floor would leave a past its cap
    {'a': 0.5, 'b': 0.5}
    """
    names = list(raw)
    if sum(raw.values()) <= 0:
        raw = {n: 1.0 for n in names}

    # Water-filling: find the scale t with sum(clip(raw * t, floor, cap)) = 1; the sum only grows with t.
    def total(t: float) -> float:
        return sum(min(cap, max(floor, raw[n] * t)) for n in names)

    low, high = 0.0, 1.0
    while total(high) < 1.0 and high < 1e12:
        high *= 2.0
    if total(high) < 1.0:
        # Even at full scale the names with weight sit at the cap and the rest at the floor, short of
        # 1: the names without weight share what is left (each stays under the cap as cap x n >= 1).
        zero = [n for n in names if raw[n] <= 0]
        left = 1.0 - cap * (len(names) - len(zero))
        return {n: (left / len(zero) if raw[n] <= 0 else cap) for n in names}
    for _ in range(100):
        mid = (low + high) / 2.0
        low, high = (mid, high) if total(mid) < 1.0 else (low, mid)
    weights = {n: min(cap, max(floor, raw[n] * high)) for n in names}
    norm = sum(weights.values())
    return {n: round(w / norm, 12) for n, w in weights.items()}


class AdaptiveMixture:
    """Per-env teaching scores and the bounded weights they give, with a row's env pick.

    Args:
        config: bounds, smoothing, the score's form and the draw's salt.
        base: env id -> the configured weight (the group file's, e.g. 0.4/0.2/0.2/0.2).

    >>> mix = AdaptiveMixture(MixtureConfig(enable=True, smoothing=1.0, cap=0.9), {"a": 0.5, "b": 0.5})
    >>> mix.weights()
    {'a': 0.5, 'b': 0.5}
    >>> mix.update({"a": (0.5, 0.0), "b": (0.0, 1.0)})  # a: half won, no flat group; b: all flat
    ['mixture weights: a 0.50 -> 0.90, b 0.50 -> 0.10']
    >>> mix.env_for(seed=3) in ("a", "b")
    True
    """

    def __init__(self, config: MixtureConfig, base: Mapping[str, float]) -> None:
        config.check_envs(len(base))
        self.config = config
        total = float(sum(base.values())) or 1.0
        self.base = {env_id: float(w) / total for env_id, w in sorted(base.items())}
        # Every env starts as if it taught fully: the configured weights until the steps say otherwise.
        self.scores = {env_id: 1.0 for env_id in self.base}
        self.last: dict[str, tuple[float, float]] = {}
        self._weights = bounded_weights(self.base, config.floor, config.cap)

    def _bounded(self) -> dict[str, float]:
        # A small constant under every score: when no env teaches, the weights fall back to the
        # configured ones rather than to equal shares.
        raw = {e: self.base[e] * (self.scores[e] + SCORE_FLOOR) for e in self.base}
        return bounded_weights(raw, self.config.floor, self.config.cap)

    def weights(self) -> dict[str, float]:
        """The current bounded weights by env id (sum 1)."""
        return dict(self._weights)

    def env_for(self, seed: int) -> str:
        """The env the row with this seed plays now: a draw from the seed against the weights."""
        u = unit_draw(self.config.seed, DRAW_NAME, int(seed))
        cumulative = 0.0
        for env_id, weight in self._weights.items():
            cumulative += weight
            if u < cumulative:
                return env_id
        return next(reversed(self._weights))

    def update(self, stats: Mapping[str, tuple[float, float | None]]) -> list[str]:
        """Fold one step's per-env (pass rate, flat-group rate) into the scores and weights.

        Args:
            stats: env id -> (pass rate, share of its groups with no reward spread, or None without a
                group of two); envs absent from the step keep their score.

        Returns:
            One line when a weight moved by at least 0.01, naming every env's move.
        """
        cfg = self.config
        for env_id, (rate, flat) in stats.items():
            if env_id not in self.scores:
                continue
            spread = 4.0 * rate * (1.0 - rate)
            teach = (
                spread if flat is None else (1 - cfg.pass_weight) * (1.0 - flat) + cfg.pass_weight * spread
            )
            self.scores[env_id] = (1 - cfg.smoothing) * self.scores[env_id] + cfg.smoothing * teach
            self.last[env_id] = (rate, -1.0 if flat is None else flat)
        before = self._weights
        self._weights = self._bounded()
        if max(abs(self._weights[e] - before[e]) for e in self.base) < 0.01:
            return []
        moves = ", ".join(f"{e} {before[e]:.2f} -> {self._weights[e]:.2f}" for e in self.base)
        return [f"mixture weights: {moves}"]

    def metrics(self, played: Iterable[str]) -> dict[str, float]:
        """Per-step metrics: each env's weight, teaching score, last pass and flat-group rates, share played."""
        played = list(played)
        out: dict[str, float] = {}
        for env_id, weight in self._weights.items():
            out[f"{METRIC_PREFIX}/{env_id}/weight"] = weight
            out[f"{METRIC_PREFIX}/{env_id}/score"] = self.scores[env_id]
            if env_id in self.last:
                out[f"{METRIC_PREFIX}/{env_id}/pass_rate"] = self.last[env_id][0]
                out[f"{METRIC_PREFIX}/{env_id}/flat_groups"] = self.last[env_id][1]
            if played:
                out[f"{METRIC_PREFIX}/{env_id}/share"] = played.count(env_id) / len(played)
        return out

    def state_dict(self) -> dict[str, Any]:
        """The scores and last rates: with the config and the base weights, the weights follow."""
        return {
            "version": STATE_VERSION,
            "scores": dict(self.scores),
            "last": {e: list(v) for e, v in self.last.items()},
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore from ``state_dict()``; envs not in the saved state keep a fresh score."""
        if state.get("version") != STATE_VERSION:
            raise ValueError(f"mixture state version {state.get('version')!r}, expected {STATE_VERSION}")
        for env_id, score in state.get("scores", {}).items():
            if env_id in self.scores:
                self.scores[env_id] = min(1.0, max(0.0, float(score)))
        for env_id, (rate, flat) in state.get("last", {}).items():
            if env_id in self.scores:
                self.last[env_id] = (float(rate), float(flat))
        self._weights = self._bounded()

    def save(self, folder: str | Path) -> Path:
        """Write the state as ``<folder>/mixture.json`` (atomically)."""
        return save_json_state(folder, STATE_FILE, self.state_dict())

    def load(self, folder: str | Path) -> bool:
        """Load ``<folder>/mixture.json`` if it exists; True when it did."""
        state = load_json_state(folder, STATE_FILE)
        if state is None:
            return False
        self.load_state_dict(state)
        return True
