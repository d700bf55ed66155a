"""Positive GRPO (trainer/estimators/positive_grpo.py) on hand-made batches with known answers, through verl's own
registry and `compute_advantage`, and its config check."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf
from verl import DataProto
from verl.trainer.ppo.core_algos import get_adv_estimator_fn
from verl.trainer.ppo.ray_trainer import compute_advantage

from trainer.compose import ConfigError, compose_config
from trainer.estimators.positive_grpo import POSITIVE_GRPO, scale_negative_advantages
from trainer.estimators.registry import register_estimators

register_estimators()  # as turngym's trainer does when it is built

REPO = Path(__file__).resolve().parents[2]


def _data(returns: list[float], uids: list[str], width: int = 3) -> DataProto:
    """One row per return, all tokens generated, the return on the last token."""
    rewards = torch.zeros(len(returns), width)
    rewards[:, -1] = torch.tensor(returns)
    return DataProto.from_dict(
        tensors={
            "token_level_rewards": rewards,
            "response_mask": torch.ones(len(returns), width, dtype=torch.long),
        },
        non_tensors={"uid": np.array(uids, dtype=object)},
    )


def _algo(**kw) -> object:
    return OmegaConf.create({"norm_adv_by_std_in_grpo": True, "gamma": 1.0, "lam": 1.0, **kw})


def test_one_win_in_a_group_of_four_is_the_only_row_pushed():
    # GRPO: mean 0.25, unbiased std 0.5 -> advantages 1.5, -0.5, -0.5, -0.5; the negatives become 0.
    out = compute_advantage(
        _data([1.0, 0.0, 0.0, 0.0], ["a"] * 4), adv_estimator=POSITIVE_GRPO, config=_algo()
    )
    adv = out.batch["advantages"]
    assert adv[0].tolist() == pytest.approx([1.5] * 3, abs=1e-4)
    assert adv[1:].abs().max().item() == 0.0


def test_scale_one_is_verls_grpo_and_a_half_halves_the_negatives():
    returns, uids = [1.0, 0.0, 0.5, 0.25, 0.0, 1.0], ["a", "a", "a", "b", "b", "b"]
    grpo = compute_advantage(_data(returns, uids), adv_estimator="grpo", config=_algo()).batch["advantages"]
    assert (grpo < 0).any() and (grpo > 0).any()
    one = compute_advantage(
        _data(returns, uids), adv_estimator=POSITIVE_GRPO, config=_algo(negative_advantage_scale=1.0)
    ).batch["advantages"]
    assert torch.equal(one, grpo)
    half = compute_advantage(
        _data(returns, uids), adv_estimator=POSITIVE_GRPO, config=_algo(negative_advantage_scale=0.5)
    ).batch["advantages"]
    assert torch.allclose(half, torch.where(grpo < 0, grpo / 2, grpo))


def test_groups_whose_returns_are_all_equal_get_nothing():
    adv = compute_advantage(
        _data([0.0, 0.0, 1.0, 1.0], ["a", "a", "b", "b"]), adv_estimator=POSITIVE_GRPO, config=_algo()
    ).batch["advantages"]
    assert adv.abs().max().item() == 0.0


def test_the_std_flag_is_read_from_the_algorithm_config():
    # Dr. GRPO (no std division): 1 - 0.25 = 0.75 on the win.
    adv = compute_advantage(
        _data([1.0, 0.0, 0.0, 0.0], ["a"] * 4),
        adv_estimator=POSITIVE_GRPO,
        config=_algo(norm_adv_by_std_in_grpo=False),
    ).batch["advantages"]
    assert adv[0, 0].item() == pytest.approx(0.75) and adv[1:].abs().max().item() == 0.0


def test_padding_stays_zero():
    data = _data([1.0, 0.0], ["a", "a"], width=4)
    data.batch["response_mask"][0, 2:] = 0
    adv = compute_advantage(data, adv_estimator=POSITIVE_GRPO, config=_algo()).batch["advantages"]
    assert adv[0, 2:].tolist() == [0.0, 0.0] and adv[0, 0] > 0


@pytest.mark.parametrize("scale", [-0.1, 1.5, float("nan")])
def test_a_scale_outside_zero_to_one_is_refused(scale):
    with pytest.raises(ValueError, match="negative_advantage_scale"):
        scale_negative_advantages(torch.tensor([-1.0, 1.0]), scale)


@pytest.mark.parametrize("value", ["2", "-1", "abc"])
def test_the_config_check_refuses_a_bad_scale_before_any_work(value):
    with pytest.raises(ConfigError, match="negative_advantage_scale"):
        compose_config(
            ["env=guess-number", "algorithm=positive-grpo", f"algorithm.negative_advantage_scale={value}"]
        )


def test_the_group_selects_the_estimator():
    cfg = compose_config(
        ["env=guess-number", "algorithm=positive-grpo", "algorithm.negative_advantage_scale=0.25"]
    )
    assert cfg.algorithm.adv_estimator == POSITIVE_GRPO and cfg.algorithm.negative_advantage_scale == 0.25


@pytest.mark.parametrize(
    ("name", "module"),
    [
        (POSITIVE_GRPO, "trainer.estimators.positive_grpo"),
        ("turn_grpo", "trainer.estimators.turn_grpo"),
        ("turn_gigpo", "trainer.estimators.turn_gigpo"),
    ],
)
def test_one_call_registers_turngyms_estimators_and_importing_registers_none(name, module):
    # A fresh interpreter: this test module already imported the estimators itself.
    code = (
        "import trainer.task_runner\n"
        "from verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY, get_adv_estimator_fn\n"
        f"assert {name!r} not in ADV_ESTIMATOR_REGISTRY, 'registered on import'\n"
        "from trainer.estimators.registry import register_estimators\n"
        "register_estimators(); register_estimators()\n"
        f"print(get_adv_estimator_fn({name!r}).__module__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == module


def test_registered_under_its_name():
    assert get_adv_estimator_fn(POSITIVE_GRPO).__module__ == "trainer.estimators.positive_grpo"
