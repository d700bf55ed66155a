"""The curriculum's and the mixture's hooks on a real verl TensorDict batch, without Ray: the mixture
picks each training row's env, then the curriculum adds its level's kwargs, and the agent loop would read
the rows as rewritten."""

from __future__ import annotations

import pytest

from rollout.agent_loop import episode_spec
from trainer.compose import compose_config, env_entries
from trainer.data.datasets import mixture_episodes
from trainer.data.step_outcomes import LEVEL_COLUMN
from trainer.hooks.curriculum.hook import CurriculumTrainerMixin
from trainer.hooks.mixture.hook import MixtureTrainerMixin


class DataloaderOnly:
    """What verl's trainer gives the hooks here: the config and a batch of the dataset's training rows."""

    def __init__(self, config, **kwargs):
        self.config = config
        self.rows = [e.to_row() for e in mixture_episodes(env_entries(config), 64, 0, "train")]

    def _next_train_batch(self, num_prompts=None):
        import torch
        from tensordict import TensorDict
        from verl.utils import tensordict_utils as tu

        batch = TensorDict({"input_ids": torch.zeros(len(self.rows), 2)}, batch_size=[len(self.rows)])
        tu.assign_non_tensor_stack(batch, "extra_info", [r["extra_info"] for r in self.rows])
        tu.assign_non_tensor_stack(batch, "data_source", [r["data_source"] for r in self.rows])
        return batch


class Hooked(CurriculumTrainerMixin, MixtureTrainerMixin, DataloaderOnly):
    pass


def _rows(batch) -> list[tuple[str, int, dict]]:
    from verl.utils import tensordict_utils as tu

    return [
        episode_spec({"extra_info": e, "data_source": d})
        for e, d in zip(tu.get(batch, "extra_info"), tu.get(batch, "data_source"), strict=True)
    ]


def test_the_mixture_picks_envs_and_the_curriculum_adds_its_levels(capsys):
    from verl.utils import tensordict_utils as tu

    config = compose_config(["env=text-game-curriculum"])
    trainer = Hooked(config)
    assert "adaptive mixture" in capsys.readouterr().out
    # Tilt the weights so the rewrite shows: maze teaches, wordle does not.
    trainer.mixture.update(
        {
            "maze-v0": (0.5, 0.0),
            "wordle-v0": (0.0, 1.0),
            "guess-number-v0": (0.0, 1.0),
            "tic-tac-toe-v0": (0.0, 1.0),
        }
    )
    trainer.pass_rate_curriculum.envs["maze-v0"].position = 1.0
    batch = trainer._next_train_batch()
    rows = _rows(batch)
    levels = list(tu.get(batch, LEVEL_COLUMN))
    maze = [(seed, kwargs) for env_id, seed, kwargs in rows if env_id == "maze-v0"]
    assert len(maze) / len(rows) == pytest.approx(trainer.mixture.weights()["maze-v0"], abs=0.15)
    assert len(maze) > 64 * 0.2  # more than the fixed mixture's share
    # Every maze row plays level 1 with the group file's kwargs (text moves, shaping) under it.
    assert all(
        kw
        == {
            "difficulty": "easy",
            "action_tool": False,
            "progress_reward": 0.25,
            "size": 2,
            "wall_density": 1.0,
        }
        for _, kw in maze
    )
    assert all(lv == 1 for (env_id, _, _), lv in zip(rows, levels, strict=True) if env_id == "maze-v0")
    # Validation never passes through _next_train_batch: its rows keep the game itself.
    seeds = [seed for _, seed, _ in rows]
    assert seeds == [int(r["extra_info"]["seed"]) for r in trainer.rows]  # seeds kept, in order


def test_with_both_off_the_rows_are_the_datasets():
    config = compose_config(["env=text-game"])
    trainer = Hooked(config)
    assert trainer.mixture is None and trainer.pass_rate_curriculum is None
    batch = trainer._next_train_batch()
    assert _rows(batch) == [episode_spec(r) for r in trainer.rows]
