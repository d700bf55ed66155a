"""A per-env difficulty curriculum for training episodes (easy -> medium -> hard and back).

Each env with the three difficulty levels has a *level* (its frontier: easy, medium or hard) and a
window of the latest outcomes of episodes played at that frontier. When the window is full and its
success rate reaches ``promote_at`` the env moves up a level; below ``demote_at`` it moves down.
Either way the window starts over, so every move is judged on ``window`` episodes at the new level.
A level maps to sampling weights over (easy, medium, hard) (``level_weights``): the weight moves to
harder episodes as the frontier moves, while easier ones stay in the mix.

The driver owns the state. Before each step it picks every training row's difficulty with
``Curriculum.difficulty(env_id, seed)``, a pure function of the row's seed and the state at that
step (so the GRPO samples of a row share one episode and a resumed run picks what the killed one
would have); after the step it feeds the step's episodes to ``Curriculum.update``. The state is
saved in every checkpoint folder (``curriculum.json``) and loaded with it.

This module is the schedule alone: it imports neither verl nor the envs. Which envs have levels and
their openings at every level are ``trainer.hooks.curriculum.rows``; the hook into verl's trainer is
``trainer.hooks.curriculum.hook``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainer.run_folder.files import load_json_state, save_json_state

LEVELS = ("easy", "medium", "hard")
STATE_FILE = "curriculum.json"
STATE_VERSION = 1
METRIC_PREFIX = "curriculum"
SCHEDULES = ("frontier", "pass_rate")

DEFAULT_LEVEL_WEIGHTS = {
    "easy": (1.0, 0.0, 0.0),
    "medium": (0.2, 0.8, 0.0),
    "hard": (0.1, 0.2, 0.7),
}


@dataclass(frozen=True)
class CurriculumConfig:
    """``turngym.curriculum``: thresholds, window and the sampling weights of each level."""

    enable: bool = False
    promote_at: float = 0.6
    demote_at: float = 0.2
    window: int = 32
    start: str = "easy"
    level_weights: Mapping[str, tuple[float, float, float]] = field(
        default_factory=lambda: dict(DEFAULT_LEVEL_WEIGHTS)
    )
    seed: int = 0
    #: frontier (the easy/medium/hard windows above) or pass_rate (trainer.hooks.curriculum.pass_rate: each
    #: env's level on its difficulty ladder follows its pass rate toward a target).
    schedule: str = "frontier"
    #: The pass_rate schedule's settings (``trainer.hooks.curriculum.pass_rate.PassRateConfig``).
    pass_rate: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        problems = []
        if self.schedule not in SCHEDULES:
            problems.append(f"schedule must be one of {list(SCHEDULES)} (got {self.schedule!r})")
        if not 0.0 <= self.demote_at < self.promote_at <= 1.0:
            problems.append(
                f"need 0 <= demote_at < promote_at <= 1 (got demote_at={self.demote_at}, "
                f"promote_at={self.promote_at})"
            )
        if self.window < 1:
            problems.append(f"window must be >= 1 (got {self.window})")
        if self.start not in LEVELS:
            problems.append(f"start must be one of {list(LEVELS)} (got {self.start!r})")
        if set(self.level_weights) != set(LEVELS):
            problems.append(
                f"level_weights needs exactly the keys {list(LEVELS)} (got {sorted(self.level_weights)})"
            )
        for name, weights in self.level_weights.items():
            if len(weights) != len(LEVELS) or min(weights) < 0 or sum(weights) <= 0:
                problems.append(
                    f"level_weights.{name} must be 3 non-negative weights (easy, medium, hard) with a "
                    f"positive sum (got {list(weights)})"
                )
        if problems:
            raise ValueError("turngym.curriculum: " + "; ".join(problems))

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any] | None) -> CurriculumConfig:
        """Build from the ``turngym.curriculum`` config node (a DictConfig or a dict); missing keys default."""
        values = dict(values or {})
        unknown = set(values) - {f for f in cls.__dataclass_fields__}
        if unknown:
            raise ValueError(f"turngym.curriculum: unknown keys {sorted(unknown)}")
        weights = values.pop("level_weights", None)
        if weights is not None:
            values["level_weights"] = {str(k): tuple(float(w) for w in v) for k, v in dict(weights).items()}
        for key, kind in (("promote_at", float), ("demote_at", float), ("window", int), ("seed", int)):
            if key in values:
                values[key] = kind(values[key])
        if "enable" in values:
            values["enable"] = bool(values["enable"])
        if "schedule" in values:
            values["schedule"] = str(values["schedule"])
        if "pass_rate" in values:
            values["pass_rate"] = dict(values["pass_rate"] or {})
        return cls(**values)


@dataclass
class EnvState:
    """One env's frontier level and the outcomes (1.0 success, 0.0 not) of its latest frontier episodes."""

    level: int
    outcomes: list[float] = field(default_factory=list)
    promotions: int = 0
    demotions: int = 0


def unit_draw(salt: int, env_id: str, seed: int) -> float:
    """A number in [0, 1) fixed by (salt, env id, seed): the same on every host and Python run."""
    digest = hashlib.blake2b(f"{salt}:{env_id}:{seed}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


class Curriculum:
    """The driver-side curriculum state for the envs of one run, with its update rule and checkpoint form.

    Args:
        config: thresholds, window, level weights and the draw's salt.
        env_ids: the envs the curriculum moves (those with easy, medium and hard levels).

    >>> cur = Curriculum(CurriculumConfig(enable=True, window=2), ["maze-v0"])
    >>> cur.difficulty("maze-v0", seed=5)  # the easy level's weights are (1, 0, 0)
    'easy'
    >>> cur.update([("maze-v0", "easy", True), ("maze-v0", "easy", True)])
    ['maze-v0 easy -> medium (frontier success 1.00)']
    >>> cur.weights("maze-v0")
    (0.2, 0.8, 0.0)
    >>> print(cur.difficulty("other-v0", seed=5))  # not in the curriculum: play as the row says
    None
    """

    def __init__(self, config: CurriculumConfig, env_ids: Iterable[str]) -> None:
        self.config = config
        start = LEVELS.index(config.start)
        self.envs: dict[str, EnvState] = {env_id: EnvState(level=start) for env_id in sorted(set(env_ids))}

    def weights(self, env_id: str) -> tuple[float, float, float]:
        """Normalised sampling weights over (easy, medium, hard) for the env's current level."""
        raw = self.config.level_weights[LEVELS[self.envs[env_id].level]]
        total = float(sum(raw))
        return tuple(float(w) / total for w in raw)  # type: ignore[return-value]

    def difficulty(self, env_id: str, seed: int) -> str | None:
        """The difficulty to play the row (env_id, seed) at now.

        Args:
            env_id: the row's env.
            seed: the row's env seed (fixes the draw, so a row's GRPO samples play one episode).

        Returns:
            ``"easy"``, ``"medium"`` or ``"hard"``; None for envs outside the curriculum.
        """
        if env_id not in self.envs:
            return None
        # One draw per (env, seed), compared against the cumulative weights: as the weights move to
        # harder levels a seed's difficulty only rises, and equal states always give equal picks.
        u = unit_draw(self.config.seed, env_id, int(seed))
        cumulative = 0.0
        weights = self.weights(env_id)
        for name, weight in zip(LEVELS, weights, strict=True):
            cumulative += weight
            if u < cumulative:
                return name
        return LEVELS[max(i for i, w in enumerate(weights) if w > 0)]

    def update(self, episodes: Iterable[tuple[str, str | None, bool]]) -> list[str]:
        """Record finished episodes; move an env's level when its full window says so.

        Args:
            episodes: ``(env_id, difficulty played, success)`` of each finished episode; only those
                played at their env's current level count.

        Returns:
            One line per level move made, e.g. ``"maze-v0 easy -> medium (frontier success 0.75)"``.
        """
        moves = []
        for env_id, difficulty, success in episodes:
            state = self.envs.get(env_id)
            if state is None or difficulty != LEVELS[state.level]:
                continue  # only frontier episodes judge the frontier
            state.outcomes.append(1.0 if success else 0.0)
            del state.outcomes[: -self.config.window]
            if len(state.outcomes) < self.config.window:
                continue
            rate = sum(state.outcomes) / len(state.outcomes)
            before = LEVELS[state.level]
            if rate >= self.config.promote_at and state.level < len(LEVELS) - 1:
                state.level += 1
                state.promotions += 1
            elif rate < self.config.demote_at and state.level > 0:
                state.level -= 1
                state.demotions += 1
            else:
                continue
            moves.append(f"{env_id} {before} -> {LEVELS[state.level]} (frontier success {rate:.2f})")
            state.outcomes.clear()
        return moves

    def metrics(self, difficulties: Iterable[str | None]) -> dict[str, float]:
        """Per-step metrics: the share of each difficulty among the step's curriculum episodes, levels, windows."""
        picked = [d for d in difficulties if d]
        out: dict[str, float] = {}
        for name in LEVELS:
            out[f"{METRIC_PREFIX}/share/{name}"] = picked.count(name) / len(picked) if picked else 0.0
        for env_id, state in self.envs.items():
            out[f"{METRIC_PREFIX}/{env_id}/level"] = float(state.level)
            out[f"{METRIC_PREFIX}/{env_id}/frontier_success"] = (
                sum(state.outcomes) / len(state.outcomes) if state.outcomes else 0.0
            )
            out[f"{METRIC_PREFIX}/{env_id}/frontier_episodes"] = float(len(state.outcomes))
        return out

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue exactly: per-env level, window and move counts."""
        return {
            "version": STATE_VERSION,
            "envs": {
                env_id: {
                    "level": LEVELS[s.level],
                    "outcomes": list(s.outcomes),
                    "promotions": s.promotions,
                    "demotions": s.demotions,
                }
                for env_id, s in self.envs.items()
            },
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore from ``state_dict()``; envs not in the saved state keep their start level."""
        if state.get("version") != STATE_VERSION:
            raise ValueError(f"curriculum state version {state.get('version')!r}, expected {STATE_VERSION}")
        for env_id, saved in state["envs"].items():
            if env_id in self.envs:
                self.envs[env_id] = EnvState(
                    level=LEVELS.index(saved["level"]),
                    outcomes=[float(x) for x in saved["outcomes"]][-self.config.window :],
                    promotions=int(saved.get("promotions", 0)),
                    demotions=int(saved.get("demotions", 0)),
                )

    def save(self, folder: str | Path) -> Path:
        """Write the state as ``<folder>/curriculum.json`` (atomically: a kill leaves the old file or the new)."""
        return save_json_state(folder, STATE_FILE, self.state_dict())

    def load(self, folder: str | Path) -> bool:
        """Load ``<folder>/curriculum.json`` if it exists; True when it did."""
        state = load_json_state(folder, STATE_FILE)
        if state is None:
            return False
        self.load_state_dict(state)
        return True
