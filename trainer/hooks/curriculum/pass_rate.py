"""A curriculum by pass rate: each env's difficulty level moves so its training groups stay near a target
success rate (50 % by default), along the env's difficulty ladder (``TextGame.difficulty_ladder``).

GRPO learns only from groups whose samples score differently, and a group of n samples is most likely
to differ when its success rate is near one half. So each env has a *level position* on its ladder, a
number in [0, top] (0 the easiest setting, top the game itself as evaluation plays it). After every
step, once at least ``min_episodes`` of the env's episodes are in, their success rate moves the
position: up by ``gain`` x 2 x (rate - target) levels (at most ``max_step``), not at all within
``band`` of the target. A row plays level floor(position) or the next one up, with the fractional part
as the chance of the higher, drawn from the row's seed: a row's GRPO samples share one episode, equal
states give equal picks in any process, and the mean level played equals the position.

This module is the schedule alone (no verl, no envs); the ladders come from
``trainer.hooks.curriculum.rows.env_ladders`` and the hook into verl's trainer is ``trainer.hooks.curriculum.hook``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainer.hooks.curriculum.schedule import METRIC_PREFIX, unit_draw
from trainer.run_folder.files import load_json_state, save_json_state

STATE_FILE = "pass_rate_curriculum.json"
STATE_VERSION = 1


@dataclass(frozen=True)
class PassRateConfig:
    """``turngym.curriculum.pass_rate``: the target success rate and how fast and far a level moves."""

    target: float = 0.5
    band: float = 0.1
    gain: float = 1.0
    max_step: float = 1.0
    min_episodes: int = 8
    start: float = 0.0
    seed: int = 0

    def __post_init__(self) -> None:
        problems = []
        if not 0.0 < self.target < 1.0:
            problems.append(f"target must be in (0, 1) (got {self.target})")
        if not 0.0 <= self.band < min(self.target, 1 - self.target):
            problems.append(f"band must be in [0, min(target, 1 - target)) (got {self.band})")
        if not 0.0 < self.gain <= 10.0:
            problems.append(f"gain must be in (0, 10] (got {self.gain})")
        if not 0.0 < self.max_step <= 10.0:
            problems.append(f"max_step must be in (0, 10] levels (got {self.max_step})")
        if not 1 <= self.min_episodes <= 100_000:
            problems.append(f"min_episodes must be in [1, 100000] (got {self.min_episodes})")
        if not 0.0 <= self.start <= 1.0:
            problems.append(f"start must be in [0, 1], a share of the ladder (got {self.start})")
        if problems:
            raise ValueError("turngym.curriculum.pass_rate: " + "; ".join(problems))

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any] | None) -> PassRateConfig:
        """Build from the config node (a DictConfig or a dict); missing keys default, unknown ones are refused.

        >>> PassRateConfig.from_mapping({"target": 0.4}).target
        0.4
        """
        values = dict(values or {})
        unknown = set(values) - set(cls.__dataclass_fields__)
        if unknown:
            raise ValueError(f"turngym.curriculum.pass_rate: unknown keys {sorted(unknown)}")
        kinds = {"min_episodes": int, "seed": int}
        out = {}
        for key, value in values.items():
            number = kinds.get(key, float)(value)
            if isinstance(number, float) and not math.isfinite(number):
                raise ValueError(f"turngym.curriculum.pass_rate: {key}={value} is not a finite number")
            out[key] = number
        return cls(**out)


@dataclass
class LadderState:
    """One env's position on its ladder and the outcomes gathered since its last judgement."""

    levels: int
    position: float
    outcomes: list[float] = field(default_factory=list)
    last_rate: float | None = None
    moves: int = 0

    @property
    def top(self) -> int:
        """The highest level: the game itself."""
        return self.levels - 1


class PassRateCurriculum:
    """Per-env ladder positions that follow the envs' training success toward a target rate.

    Args:
        config: target, band, gain, bounds and the draw's salt.
        ladders: env id -> its ladder, kwargs per level, easiest first, the game itself last (``{}``).

    >>> ladders = {"maze-v0": [{"size": 2}, {"size": 3}, {}]}
    >>> cur = PassRateCurriculum(PassRateConfig(min_episodes=4), ladders)
    >>> cur.level_kwargs("maze-v0", seed=5), cur.position("maze-v0")
    ({'size': 2}, 0.0)
    >>> cur.update([("maze-v0", True)] * 4)  # all won: move up by gain x 2 x (1 - 0.5) = 1 level
    ['maze-v0 level 0.00 -> 1.00 (pass rate 1.00)']
    >>> cur.level_kwargs("maze-v0", seed=5)
    {'size': 3}
    >>> print(cur.level_kwargs("other-v0", seed=5))  # not in the curriculum: play as the row says
    None
    """

    def __init__(self, config: PassRateConfig, ladders: Mapping[str, Sequence[Mapping[str, Any]]]) -> None:
        self.config = config
        self.ladders = {
            env_id: [dict(level) for level in ladder] for env_id, ladder in sorted(ladders.items())
        }
        self.envs = {
            env_id: LadderState(levels=len(ladder), position=config.start * (len(ladder) - 1))
            for env_id, ladder in self.ladders.items()
        }

    def position(self, env_id: str) -> float:
        """The env's level position in [0, top]."""
        return self.envs[env_id].position

    def level(self, env_id: str, seed: int) -> int | None:
        """The level the row (env_id, seed) plays now; None for envs outside the curriculum.

        Args:
            env_id: the row's env.
            seed: the row's env seed (fixes the draw, so a row's GRPO samples play one episode).

        Returns:
            floor(position), or one level higher with the position's fractional part as its chance.
        """
        state = self.envs.get(env_id)
        if state is None:
            return None
        low = math.floor(state.position)
        higher = unit_draw(self.config.seed, env_id, int(seed)) < state.position - low
        return min(low + higher, state.top)

    def level_kwargs(self, env_id: str, seed: int) -> dict[str, Any] | None:
        """The kwargs of the row's level (``{}`` at the top: the game itself); None outside the curriculum."""
        level = self.level(env_id, seed)
        return None if level is None else dict(self.ladders[env_id][level])

    def update(self, episodes: Iterable[tuple[str, bool]]) -> list[str]:
        """Record a step's finished episodes; move each env whose gathered outcomes are enough to judge.

        Args:
            episodes: ``(env_id, success)`` of each finished, not failed, training episode.

        Returns:
            One line per position moved, e.g. ``"maze-v0 level 0.00 -> 1.00 (pass rate 1.00)"``.
        """
        cfg = self.config
        for env_id, success in episodes:
            if env_id in self.envs:
                self.envs[env_id].outcomes.append(1.0 if success else 0.0)
        lines = []
        for env_id, state in self.envs.items():
            if len(state.outcomes) < cfg.min_episodes:
                continue
            rate = sum(state.outcomes) / len(state.outcomes)
            state.outcomes.clear()
            state.last_rate = rate
            error = rate - cfg.target
            if abs(error) <= cfg.band:
                continue
            move = max(-cfg.max_step, min(cfg.max_step, cfg.gain * 2.0 * error))
            before = state.position
            state.position = max(0.0, min(float(state.top), before + move))
            if state.position != before:
                state.moves += 1
                lines.append(f"{env_id} level {before:.2f} -> {state.position:.2f} (pass rate {rate:.2f})")
        return lines

    def metrics(self, played: Iterable[tuple[str, int]]) -> dict[str, float]:
        """Per-step metrics: each env's position, top, last judged pass rate and mean level played.

        Args:
            played: ``(env_id, level)`` of the step's training episodes.
        """
        levels: dict[str, list[int]] = {}
        for env_id, level in played:
            levels.setdefault(env_id, []).append(level)
        out: dict[str, float] = {}
        for env_id, state in self.envs.items():
            out[f"{METRIC_PREFIX}/{env_id}/level"] = state.position
            out[f"{METRIC_PREFIX}/{env_id}/top_level"] = float(state.top)
            out[f"{METRIC_PREFIX}/{env_id}/pass_rate"] = -1.0 if state.last_rate is None else state.last_rate
            if levels.get(env_id):
                out[f"{METRIC_PREFIX}/{env_id}/level_played"] = sum(levels[env_id]) / len(levels[env_id])
        return out

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue exactly: per-env ladder length, position, gathered outcomes."""
        return {
            "version": STATE_VERSION,
            "envs": {
                env_id: {
                    "levels": s.levels,
                    "position": s.position,
                    "outcomes": list(s.outcomes),
                    "last_rate": s.last_rate,
                    "moves": s.moves,
                }
                for env_id, s in self.envs.items()
            },
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore from ``state_dict()``; an env whose ladder changed length keeps its share of the ladder."""
        if state.get("version") != STATE_VERSION:
            raise ValueError(
                f"pass-rate curriculum state version {state.get('version')!r}, expected {STATE_VERSION}"
            )
        for env_id, saved in state["envs"].items():
            current = self.envs.get(env_id)
            if current is None:
                continue
            saved_top = max(1, int(saved["levels"]) - 1)
            position = float(saved["position"])
            if int(saved["levels"]) != current.levels:
                position = position / saved_top * current.top
            current.position = max(0.0, min(float(current.top), position))
            current.outcomes = [float(x) for x in saved.get("outcomes", [])]
            current.last_rate = saved.get("last_rate")
            current.moves = int(saved.get("moves", 0))

    def save(self, folder: str | Path) -> Path:
        """Write the state as ``<folder>/pass_rate_curriculum.json`` (atomically)."""
        return save_json_state(folder, STATE_FILE, self.state_dict())

    def load(self, folder: str | Path) -> bool:
        """Load ``<folder>/pass_rate_curriculum.json`` if it exists; True when it did."""
        state = load_json_state(folder, STATE_FILE)
        if state is None:
            return False
        self.load_state_dict(state)
        return True
