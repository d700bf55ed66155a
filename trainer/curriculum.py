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
saved in every checkpoint folder (``curriculum.json``) and loaded with it. Nothing here imports verl.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

LEVELS = ("easy", "medium", "hard")
STATE_FILE = "curriculum.json"
STATE_VERSION = 1
METRIC_PREFIX = "curriculum"

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

    def __post_init__(self) -> None:
        problems = []
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
    """The driver-side curriculum state for the envs of one run, with its update rule and checkpoint form."""

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
        """The difficulty to play the row (env_id, seed) at now; None for envs outside the curriculum."""
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
        """Record (env_id, difficulty, success) of finished episodes; return the level moves made."""
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
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / STATE_FILE
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(self.state_dict(), indent=1, sort_keys=True))
        os.replace(tmp, path)
        return path

    def load(self, folder: str | Path) -> bool:
        """Load ``<folder>/curriculum.json`` if it exists; True when it did."""
        path = Path(folder) / STATE_FILE
        if not path.exists():
            return False
        self.load_state_dict(json.loads(path.read_text()))
        return True


def has_levels(env_id: str) -> bool:
    """True when the env's constructor takes ``difficulty`` with all of easy, medium and hard."""
    import envs

    try:
        cls = envs.spec(env_id).load()
    except Exception:  # noqa: BLE001 - unknown ids are reported by the config check
        return False
    declared = getattr(cls, "difficulties", None) or (getattr(cls, "reset_options", None) or {}).get(
        "difficulty"
    )
    return bool(declared) and all(level in declared for level in LEVELS)


def curriculum_env_ids(env_ids: Iterable[str]) -> list[str]:
    """The env ids (of a run's mixture) that have the three levels the curriculum moves through."""
    return sorted(env_id for env_id in set(env_ids) if has_levels(env_id))


def level_opening_rows(rows: Iterable[Mapping[str, Any]], env_ids: Iterable[str]) -> list[dict[str, Any]]:
    """Copies of the curriculum envs' rows at every other level, each with that level's opening prompt."""
    # The prompt budget is measured on these too: a harder level can open with a longer prompt (a
    # bigger maze) than the dataset's difficulty, and a prompt over budget trains on nothing.
    from trainer.datasets import opening_messages

    managed = set(env_ids)
    out = []
    for row in rows:
        extra = dict(row["extra_info"])
        if extra["env_id"] not in managed:
            continue
        kwargs = json.loads(extra.get("env_kwargs") or "{}")
        for level in LEVELS:
            if kwargs.get("difficulty") == level:
                continue
            level_kwargs = {**kwargs, "difficulty": level}
            out.append(
                {
                    **row,
                    "prompt": opening_messages(extra["env_id"], level_kwargs, int(extra["seed"])),
                    "extra_info": {**extra, "env_kwargs": json.dumps(level_kwargs, sort_keys=True)},
                }
            )
    return out


def write_level_openings(train_path: str | Path, out_path: str | Path, env_ids: Iterable[str]) -> Path:
    """Write ``level_opening_rows`` of the training rows to ``out_path`` (parquet) for the prompt budget."""
    import pandas as pd

    rows = pd.read_parquet(train_path).to_dict("records")
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(level_opening_rows(rows, env_ids)).to_parquet(out_path)
    return out_path


class CurriculumTrainerMixin:
    """Curriculum hooks for verl's v1 ``PPOTrainer`` (mix in before it): difficulty per training row,
    the update after each step, the state in each checkpoint folder.

    Methods overridden, all of them ``PPOTrainer``'s: ``_next_train_batch`` (every training prompt
    the trainer sends to the rollout passes through it; validation does not), ``step`` (runs before
    the checkpoint of the same step is saved), ``_save_checkpoint`` and ``_load_checkpoint``.
    """

    def __init__(self, config: Any, **kwargs: Any) -> None:
        super().__init__(config=config, **kwargs)
        self.curriculum: Curriculum | None = None
        settings = CurriculumConfig.from_mapping(config.turngym.get("curriculum"))
        if settings.enable:
            from trainer.compose import env_entries

            env_ids = curriculum_env_ids(entry["id"] for entry in env_entries(config))
            self.curriculum = Curriculum(settings, env_ids)
            print(f"[turngym] curriculum over {', '.join(env_ids) or 'no env (none has levels)'}", flush=True)

    def _next_train_batch(self, num_prompts: int | None = None) -> Any:
        batch = super()._next_train_batch(num_prompts)
        if self.curriculum is not None:
            from verl.utils import tensordict_utils as tu

            from rollout.agent_loop import DIFFICULTY_KEY

            picks = [
                self.curriculum.difficulty(str(extra["env_id"]), int(extra["seed"])) or ""
                for extra in tu.get(batch, "extra_info")
            ]
            tu.assign_non_tensor_stack(batch, DIFFICULTY_KEY, picks)
        return batch

    def step(self, metrics: dict, timing_raw: dict) -> Any:
        batch = super().step(metrics, timing_raw)
        if self.curriculum is not None:
            metrics.update(self._update_curriculum(batch))
        return batch

    def _update_curriculum(self, batch: Any) -> dict[str, float]:
        """Feed the step's real episodes to the curriculum; its metrics for this step."""
        import numpy as np
        import transfer_queue as tq
        from verl.utils import tensordict_utils as tu

        from rollout.agent_loop import DIFFICULTY_KEY
        from trainer.progress import episode_successes

        data = tq.kv_batch_get(
            keys=batch.keys,
            partition_id=batch.partition_id,
            select_fields=["extra_info", DIFFICULTY_KEY, "extra_fields", "rm_scores"],
        )
        infos = list(tu.get(data, "extra_info"))
        picks = [str(d or "") for d in tu.get(data, DIFFICULTY_KEY)]
        extra_fields = list(tu.get(data, "extra_fields"))
        scores = np.array([float(t.sum()) for t in data["rm_scores"].unbind(0)])
        successes = episode_successes(extra_fields, scores, float(self.config.turngym.success_threshold))
        real = [
            i
            for i, tag in enumerate(batch.tags)
            if not tag.get("is_padding", False) and not (extra_fields[i] or {}).get("turngym_failed", False)
        ]
        moves = self.curriculum.update(
            (str(infos[i]["env_id"]), picks[i] or None, bool(successes[i])) for i in real
        )
        for move in moves:
            print(f"[turngym] curriculum: {move}", flush=True)
        return self.curriculum.metrics(picks[i] for i in real)

    def _save_checkpoint(self) -> None:
        if self.curriculum is not None:
            # Before verl's own save: verl marks the folder latest last, so a latest checkpoint
            # always holds the curriculum of its step.
            self.curriculum.save(
                Path(self.config.trainer.default_local_dir) / f"global_step_{self.global_steps}"
            )
        super()._save_checkpoint()

    def _load_checkpoint(self) -> None:
        super()._load_checkpoint()
        if self.curriculum is None or not self.global_steps:
            return
        if self.config.trainer.resume_mode == "resume_path":
            folder = Path(self.config.trainer.resume_from_path)
        else:
            folder = Path(self.config.trainer.default_local_dir) / f"global_step_{self.global_steps}"
        if self.curriculum.load(folder):
            levels = ", ".join(f"{e} {LEVELS[s.level]}" for e, s in self.curriculum.envs.items())
            print(f"[turngym] curriculum resumed at step {self.global_steps}: {levels}", flush=True)
        else:
            print(
                f"[turngym] no {STATE_FILE} in {folder}: the curriculum starts over at {self.curriculum.config.start}",
                flush=True,
            )
