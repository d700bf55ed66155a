"""Turn-level credit (trainer/estimators/turn_grpo.py, turn_gigpo.py, turns.py) on hand-made batches with known answers, through verl's
own registry and `compute_advantage`, and the rollout's per-turn `rm_scores`."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf
from verl import DataProto
from verl.trainer.ppo.core_algos import get_adv_estimator_fn
from verl.trainer.ppo.ray_trainer import compute_advantage

from trainer.estimators.registry import register_estimators
from trainer.estimators.turn_gigpo import (
    TURN_GIGPO,
    compute_turn_gigpo_advantage,
    step_group_stats,
    step_groups,
)
from trainer.estimators.turn_grpo import TURN_GRPO, compute_turn_grpo_advantage
from trainer.estimators.turns import turn_index, turn_rewards

register_estimators()  # as turngym's trainer does when it is built


def _batch(rows: list[tuple[list[int], dict[int, float]]]) -> tuple[torch.Tensor, torch.Tensor]:
    """(token_level_rewards, response_mask) from (mask, {position: reward}) per row, right-padded."""
    width = max(len(mask) for mask, _ in rows)
    rewards = torch.zeros(len(rows), width)
    masks = torch.zeros(len(rows), width, dtype=torch.long)
    for i, (mask, placed) in enumerate(rows):
        masks[i, : len(mask)] = torch.tensor(mask)
        for pos, r in placed.items():
            rewards[i, pos] = r
    return rewards, masks


def _algo(**kw) -> object:
    return OmegaConf.create({"gamma": 1.0, "norm_adv_by_std_in_grpo": True, **kw})


def test_turns_are_runs_of_generated_tokens():
    mask = torch.tensor([[1, 1, 0, 0, 1, 0, 1, 1, 0], [0, 0, 0, 0, 0, 0, 0, 0, 0]])
    assert turn_index(mask).tolist() == [[0, 0, -1, -1, 1, -1, 2, 2, -1], [-1] * 9]


def test_rewards_off_generated_tokens_go_to_the_turn_before():
    # A turn cut by the per-turn cap ends with a context token (mask 0); a placeholder row has no turn.
    rewards, mask = _batch([([1, 1, 0, 1, 1, 0], {2: 0.5, 4: 1.0, 5: 0.25}), ([0], {0: 0.7})])
    per_row = turn_rewards(rewards, turn_index(mask))
    assert per_row[0].tolist() == [0.5, 1.25]
    assert per_row[1].tolist() == pytest.approx([0.7])


def test_exact_advantages_two_groups():
    # Group "a": episode 0 has 2 turns (rewards 0, 1), episode 1 has 3 turns (-0.5, 0, 0); gamma 0.5.
    # Returns: ep0 [0.5, 1], ep1 [-0.5, 0, 0]. Episode-weighted mean (0.75 - 1/6) / 2 = 7/24;
    # variance (mean((G0 - m)^2) + mean((G1 - m)^2)) / (2 - 1) = (157 + 153) / 576, std = sqrt(310) / 24.
    rows = [
        ([1, 1, 0, 1, 1, 0, 0], {1: 0.0, 4: 1.0}),
        ([1, 0, 1, 0, 1, 0, 0], {0: -0.5, 2: 0.0, 4: 0.0}),
        # Group "b": two single-turn episodes, returns 1 and 3 -> GRPO's -1/sqrt(2), +1/sqrt(2).
        ([1, 1, 0], {1: 1.0}),
        ([1, 1, 1, 1], {3: 3.0}),
    ]
    rewards, mask = _batch(rows)
    index = np.array(["a", "a", "b", "b"], dtype=object)
    adv, ret = compute_turn_grpo_advantage(rewards, mask, index=index, config=_algo(gamma=0.5))
    s = math.sqrt(310)
    expected = [
        [5 / s, 5 / s, 0, 17 / s, 17 / s, 0, 0],
        [-19 / s, 0, -7 / s, 0, -7 / s, 0, 0],
        [-1 / math.sqrt(2), -1 / math.sqrt(2), 0, 0, 0, 0, 0],
        [1 / math.sqrt(2)] * 4 + [0, 0, 0],
    ]
    for got, want in zip(adv.tolist(), expected, strict=True):
        assert got == pytest.approx(want, abs=1e-5)
    assert ret[0].tolist() == pytest.approx([0.5, 0.5, 0, 1, 1, 0, 0])
    assert ret[1].tolist() == pytest.approx([-0.5, 0, 0, 0, 0, 0, 0])


def test_without_std_normalisation_advantages_are_centred_returns():
    rows = [([1, 1, 0, 1, 1, 0, 0], {1: 0.0, 4: 1.0}), ([1, 0, 1, 0, 1, 0, 0], {0: -0.5, 2: 0.0, 4: 0.0})]
    rewards, mask = _batch(rows)
    config = _algo(gamma=0.5, norm_adv_by_std_in_grpo=False)
    adv, _ = compute_turn_grpo_advantage(rewards, mask, index=np.array([0, 0]), config=config)
    m = 7 / 24
    assert adv[0].tolist() == pytest.approx([0.5 - m, 0.5 - m, 0, 1 - m, 1 - m, 0, 0], abs=1e-6)
    assert adv[1].tolist() == pytest.approx([-0.5 - m, 0, -m, 0, -m, 0, 0], abs=1e-6)


def _grpo(rewards, mask, index, norm=True):
    return get_adv_estimator_fn("grpo")(rewards, mask, index=index, norm_adv_by_std_in_grpo=norm)[0]


@pytest.mark.parametrize("norm", [True, False])
def test_single_turn_episodes_reduce_to_grpo(norm):
    gen = torch.Generator().manual_seed(0)
    rows = []
    for _ in range(11):
        length = int(torch.randint(1, 9, (1,), generator=gen))
        reward = float(torch.randn(1, generator=gen))
        rows.append(([1] * length, {length - 1: reward}))
    rows.append(([1, 1], {1: 0.3}))  # equal rewards in a group -> advantage 0
    rows.append(([1, 1, 1], {2: 0.3}))
    rewards, mask = _batch(rows)
    # groups of 4, 4, 1 and 2 (equal rewards)
    index = np.array([0] * 4 + [1] * 4 + [2] + [3] * 2 + [4] * 2, dtype=object)
    adv, _ = compute_turn_grpo_advantage(
        rewards, mask, index=index, config=_algo(gamma=0.9, norm_adv_by_std_in_grpo=norm)
    )
    grpo = _grpo(rewards, mask, index, norm)
    lone = 8
    others = [i for i in range(len(rows)) if i != lone]
    assert torch.allclose(adv[others], grpo[others], atol=1e-5)
    # verl's GRPO keeps a lone episode's raw score (mean 0, std 1); a group of one valid member gets 0
    assert grpo[lone].abs().max() > 0 and adv[lone].abs().max() == 0
    assert adv[-2:].abs().max() == 0


def test_gamma_one_with_only_a_final_reward_equals_grpo_on_every_turn():
    rows = [
        ([1, 1, 0, 0, 1, 0, 1], {6: 1.0}),
        ([1, 0, 1, 1, 0, 0, 0], {3: 0.0}),
        ([1, 1, 1, 0, 1, 1, 0], {5: 0.5}),
        ([1, 0, 0, 0, 0, 0, 0], {0: -1.0}),
    ]
    rewards, mask = _batch(rows)
    index = np.array(["g"] * 4, dtype=object)
    adv, _ = compute_turn_grpo_advantage(rewards, mask, index=index, config=_algo())
    assert torch.allclose(adv, _grpo(rewards, mask, index), atol=1e-5)


def test_env_tool_and_padding_tokens_get_zero():
    rows = [
        ([0, 1, 1, 0, 0, 0, 1, 0, 0, 0], {2: -0.2, 6: 1.0}),
        ([1, 1, 0, 0, 1, 1, 1], {1: 0.0, 6: 0.0}),
        ([0], {0: 0.0}),  # a failed episode's placeholder: no generated token
    ]
    rewards, mask = _batch(rows)
    adv, ret = compute_turn_grpo_advantage(rewards, mask, index=np.array([7, 7, 7]), config=_algo(gamma=0.9))
    assert (adv[mask == 0] == 0).all() and (ret[mask == 0] == 0).all()
    assert (adv[mask == 1] != 0).all()
    # later turns of row 0 escape the early penalty: reward-to-go, not the episode return
    assert adv[0, 6] > adv[0, 1]


def test_placeholder_rows_flagged_failed_are_left_out_of_the_group():
    from trainer.estimators.valid_groups import known_failures

    rows = [([1, 1], {1: 1.0}), ([1, 1, 1], {2: 0.0}), ([0, 0], {1: 0.0})]
    rewards, mask = _batch(rows)
    index = np.array([0, 0, 0])
    # unflagged, a placeholder is a member like any other (verl's GRPO does the same)
    adv, _ = compute_turn_grpo_advantage(rewards, mask, index=index, config=_algo())
    assert torch.allclose(adv, _grpo(rewards, mask, index), atol=1e-5)
    with known_failures([False, False, True]):
        adv, _ = compute_turn_grpo_advantage(rewards, mask, index=index, config=_algo())
    alone = _grpo(rewards[:2], mask[:2], index[:2])
    assert torch.allclose(adv[:2, :2], alone[:, :2], atol=1e-5) and adv[2].abs().max() == 0


def test_verl_compute_advantage_finds_it_by_name_and_passes_uid_and_config():
    assert get_adv_estimator_fn(TURN_GRPO) is compute_turn_grpo_advantage
    rows = [([1, 1, 0, 1, 1, 0, 0], {1: 0.0, 4: 1.0}), ([1, 0, 1, 0, 1, 0, 0], {0: -0.5, 2: 0.0, 4: 0.0})]
    rewards, mask = _batch(rows)
    data = DataProto.from_dict(
        tensors={"token_level_rewards": rewards, "response_mask": mask},
        non_tensors={"uid": np.array(["u", "u"], dtype=object)},
    )
    out = compute_advantage(data, adv_estimator=TURN_GRPO, config=_algo(gamma=0.5))
    s = math.sqrt(310)
    assert out.batch["advantages"][0].tolist() == pytest.approx(
        [5 / s, 5 / s, 0, 17 / s, 17 / s, 0, 0], abs=1e-5
    )


def test_the_v1_trainer_path_delegates_to_the_estimator():
    from verl.trainer.ppo.v1.utils import compute_advantage_for_multi_trajectories

    rows = [([1, 0, 1], {0: 1.0, 2: 0.0}), ([1, 1, 1], {2: 0.0})]
    rewards, mask = _batch(rows)
    data = DataProto.from_dict(
        tensors={"token_level_rewards": rewards, "response_mask": mask},
        non_tensors={"uid": np.array(["u", "u"], dtype=object)},
    )
    out = compute_advantage_for_multi_trajectories(
        data, batch_keys=["u_0_0", "u_1_0"], adv_estimator=TURN_GRPO, config=_algo()
    )
    adv = out.batch["advantages"]
    # returns: row 0 turns [1, 0], row 1 [0]; episode means 0.5 and 0 -> mean 0.25
    assert adv[0, 0] > 0 and adv[0, 2] < 0 and adv[0, 1] == 0 and adv[1, 0] < 0


class _Tokenizer:
    pad_token_id = 0


def _trajectory(**kw):
    from rollout.trajectory import Trajectory, TurnRecord

    turns = [TurnRecord(start=0, end=2, reward=-0.1), TurnRecord(start=4, end=6, reward=1.0)]
    base = dict(
        prompt_ids=[1, 2],
        response_ids=[5, 6, 7, 8, 9, 10],
        loss_mask=[1, 1, 0, 0, 1, 1],
        logprobs=[0.0] * 6,
        turns=turns,
        termination="terminated",
    )
    return Trajectory(**{**base, **kw})


def test_rollout_puts_each_turn_reward_on_its_last_generated_token():
    from rollout.agent_loop import trajectory_to_output

    out = trajectory_to_output(_trajectory(), _Tokenizer(), None)
    scores = out.as_dict()["rm_scores"]
    assert scores.tolist() == pytest.approx([0, -0.1, 0, 0, 0, 1.0])
    assert float(scores.sum()) == pytest.approx(out.reward_score)


def test_rollout_keeps_verls_placement_when_the_score_was_replaced_or_the_episode_failed():
    from rollout.agent_loop import trajectory_to_output

    out = trajectory_to_output(_trajectory(), _Tokenizer(), None)
    out.reward_score = 2.0  # e.g. a reward function scored the episode after the loop
    assert out.as_dict()["rm_scores"].tolist() == [0, 0, 0, 0, 0, 2.0]
    failed = trajectory_to_output(_trajectory(failed=True, termination="failed"), _Tokenizer(), None)
    assert failed.as_dict()["rm_scores"].tolist() == [0.0]


def _gigpo_batch():
    # gamma 1. Episode returns 1, 0, 0.5 -> GRPO episode advantages +1, -1, 0 (std 0.5).
    # Turn 0 of all three acts in the same state A (same prompt): returns 1, 0, 0.5 -> step +0.5, -0.5, 0.
    # Turn 1: episode 0 in state B, episode 1 in state C: groups of one -> step 0.
    rows = [
        ([1, 1, 0, 1, 0], {1: 0.0, 3: 1.0}),
        ([1, 0, 0, 1, 1], {0: 0.0, 4: 0.0}),
        ([1, 1, 1, 0, 0], {2: 0.5}),
    ]
    rewards, mask = _batch(rows)
    anchors = [["A", "B"], ["A", "C"], ["A"]]
    return rewards, mask, np.array(["g"] * 3, dtype=object), anchors


def test_gigpo_exact_episode_plus_step_advantages():
    rewards, mask, index, anchors = _gigpo_batch()
    adv, ret = compute_turn_gigpo_advantage(rewards, mask, index=index, config=_algo(), turn_anchors=anchors)
    assert adv[0].tolist() == pytest.approx([1.5, 1.5, 0, 1.0, 0], abs=1e-5)
    assert adv[1].tolist() == pytest.approx([-1.5, 0, 0, -1.0, -1.0], abs=1e-5)
    assert adv[2].tolist() == pytest.approx([0, 0, 0, 0, 0], abs=1e-5)
    assert ret[0].tolist() == pytest.approx([1, 1, 0, 1, 0])


def test_gigpo_step_weight_and_std_normalised_steps():
    rewards, mask, index, anchors = _gigpo_batch()
    config = _algo(turn_credit={"step_weight": 0.5, "step_norm": "mean_std"})
    adv, _ = compute_turn_gigpo_advantage(rewards, mask, index=index, config=config, turn_anchors=anchors)
    # state A returns 1, 0, 0.5: mean 0.5, std 0.5 -> step +1, -1, 0, weighted by 0.5
    assert adv[0].tolist() == pytest.approx([1.5, 1.5, 0, 1.0, 0], abs=1e-5)
    assert adv[1].tolist() == pytest.approx([-1.5, 0, 0, -1.0, -1.0], abs=1e-5)


def test_gigpo_groups_states_only_within_a_grpo_group_and_needs_anchors():
    rewards, mask, _, anchors = _gigpo_batch()
    index = np.array(["g", "h", "h"], dtype=object)
    adv, _ = compute_turn_gigpo_advantage(rewards, mask, index=index, config=_algo(), turn_anchors=anchors)
    # alone in its group: no baseline, advantage 0 (verl's GRPO would keep the raw return)
    assert adv[0].tolist() == pytest.approx([0, 0, 0, 0, 0], abs=1e-5)
    with pytest.raises(ValueError, match="turn anchors"):
        compute_turn_gigpo_advantage(rewards, mask, index=index, config=_algo())
    assert get_adv_estimator_fn(TURN_GIGPO) is compute_turn_gigpo_advantage


def test_gigpo_batch_scope_pools_equal_states_across_grpo_groups():
    rewards, mask, _, anchors = _gigpo_batch()
    index = np.array(["g", "h", "h"], dtype=object)
    config = _algo(norm_adv_by_std_in_grpo=False, turn_credit={"step_group": "batch"})
    adv, _ = compute_turn_gigpo_advantage(rewards, mask, index=index, config=config, turn_anchors=anchors)
    # episode part (no std): g alone gets 0 (no baseline); h returns 0, 0.5 -> -0.25, +0.25.
    # step part: state A pooled over all three rows (returns 1, 0, 0.5) -> +0.5, -0.5, 0; B, C alone -> 0;
    # row 0 still serves as a baseline for state A, but its own advantage is 0 (a group of one).
    assert adv[0].tolist() == pytest.approx([0, 0, 0, 0, 0], abs=1e-5)
    assert adv[1].tolist() == pytest.approx([-0.75, 0, 0, -0.25, -0.25], abs=1e-5)
    assert adv[2].tolist() == pytest.approx([0.25, 0.25, 0.25, 0, 0], abs=1e-5)
    # within GRPO groups (GiGPO's default) row 0 has no peer in A and rows 1, 2 centre on 0.25
    grouped = _algo(norm_adv_by_std_in_grpo=False, turn_credit={"step_group": "group"})
    adv, _ = compute_turn_gigpo_advantage(rewards, mask, index=index, config=grouped, turn_anchors=anchors)
    assert adv[0].tolist() == pytest.approx([0, 0, 0, 0, 0], abs=1e-5)
    assert adv[1].tolist() == pytest.approx([-0.5, 0, 0, -0.25, -0.25], abs=1e-5)
    with pytest.raises(ValueError, match="step_group='episode'; valid choices: group, batch"):
        compute_turn_gigpo_advantage(
            rewards,
            mask,
            index=index,
            config=_algo(turn_credit={"step_group": "episode"}),
            turn_anchors=anchors,
        )


def test_rollout_anchors_equal_exactly_for_equal_histories():
    from rollout.agent_loop import turn_anchors
    from rollout.trajectory import TurnRecord

    a = _trajectory()
    b = _trajectory(response_ids=[5, 6, 7, 8, 11, 12])  # same history before turn 1, other turn-1 reply
    c = _trajectory(response_ids=[5, 9, 7, 8, 9, 10])  # another turn-0 reply
    d = _trajectory(prompt_ids=[1, 3])
    assert turn_anchors(a) == turn_anchors(b)
    assert turn_anchors(a)[0] == turn_anchors(c)[0] and turn_anchors(a)[1] != turn_anchors(c)[1]
    assert turn_anchors(a)[0] != turn_anchors(d)[0]
    three = _trajectory(turns=[TurnRecord(0, 2), TurnRecord(4, 5), TurnRecord(5, 6)])
    assert len(set(turn_anchors(three))) == 3


def test_gigpo_step_group_stats():
    _, _, index, anchors = _gigpo_batch()
    stats = step_group_stats(step_groups(index, anchors, [2, 2, 1]))
    # groups: A (3 turns), B (1), C (1)
    assert stats["turn_credit/step_group_size/mean"] == pytest.approx(5 / 3)
    assert stats["turn_credit/grouped_turn_share"] == pytest.approx(3 / 5)
    assert stats["turn_credit/grouped_later_turn_share"] == 0.0


def test_the_rollouts_turn_spans_give_the_numbers_the_mask_runs_give():
    """Under turngym's trainer the estimators read the rollout's TurnSpans (`rollout_turns`); on rows
    the agent loop writes they number the turns as the mask's runs do, so the advantages are equal."""
    from rollout.agent_loop import trajectory_to_output
    from trainer.estimators.turns import _TURN_ANCHORS, _TURN_SPANS, rollout_turns

    outputs = [
        trajectory_to_output(_trajectory(), _Tokenizer(), None),
        trajectory_to_output(
            _trajectory(turns=_trajectory().turns[:1], response_ids=[5, 6, 7], loss_mask=[1, 1, 0]),
            _Tokenizer(),
            None,
        ),
        trajectory_to_output(_trajectory(failed=True, termination="failed"), _Tokenizer(), None),
    ]
    rows = [o.as_dict() for o in outputs]
    width = max(len(r["response_mask"]) for r in rows)
    mask = torch.zeros(len(rows), width, dtype=torch.long)
    rewards = torch.zeros(len(rows), width)
    for i, r in enumerate(rows):
        mask[i, : len(r["response_mask"])] = r["response_mask"]
        rewards[i, : len(r["rm_scores"])] = r["rm_scores"]
    anchors, spans = rollout_turns([o.extra_fields for o in outputs] + [None])
    assert spans[-1] is None and anchors[-1] == []  # a row without fields keeps the mask's runs
    anchors, spans = anchors[:-1], spans[:-1]
    # The failed row keeps its turns' spans, but its placeholder response has no generated token.
    assert spans[0] == [(0, 2), (4, 6)] and spans[1] == [(0, 2)] and rows[2]["response_mask"].tolist() == [0]
    assert turn_index(mask, spans).tolist() == turn_index(mask).tolist()
    # Where spans and runs differ (two turns with no token between them), the spans are exact.
    assert turn_index(torch.tensor([[1, 1, 1]]), [[(0, 1), (1, 3)]]).tolist() == [[0, 1, 1]]
    index = np.array(["g", "g", "g"], dtype=object)
    for estimator in (compute_turn_grpo_advantage, compute_turn_gigpo_advantage):
        token = _TURN_ANCHORS.set(anchors)
        try:
            plain = estimator(rewards, mask, index=index, config=_algo())
            spans_token = _TURN_SPANS.set(spans)
            try:
                typed = estimator(rewards, mask, index=index, config=_algo())
            finally:
                _TURN_SPANS.reset(spans_token)
        finally:
            _TURN_ANCHORS.reset(token)
        assert torch.equal(plain[0], typed[0]) and torch.equal(plain[1], typed[1])
