"""Failures bias nothing (trainer/estimators/valid_groups.py): a failed episode's placeholder and a non-finite
return are left out of their GRPO group's statistics for grpo, turn_grpo, turn_gigpo and positive_grpo;
a group with fewer than two valid members gets advantage 0; the counts reach the metrics. Run through
verl's own `compute_advantage`, as the trainer calls it."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf
from verl import DataProto
from verl.trainer.ppo.core_algos import get_adv_estimator_fn
from verl.trainer.ppo.ray_trainer import compute_advantage

from rollout.episode_result import EpisodeResult
from trainer.estimators.grpo_valid import ESTIMATOR_FOR, VALID_GRPO, compute_valid_grpo_advantage
from trainer.estimators.positive_grpo import POSITIVE_GRPO
from trainer.estimators.registry import register_estimators
from trainer.estimators.turn_gigpo import TURN_GIGPO
from trainer.estimators.turn_grpo import TURN_GRPO
from trainer.estimators.turns import _TURN_ANCHORS
from trainer.estimators.valid_groups import (
    FAILED_LEFT_OUT,
    GROUPS,
    NONFINITE_LEFT_OUT,
    UNDER_TWO_VALID,
    failed_flags,
    known_failures,
)

register_estimators()  # as turngym's trainer does when it is built

# The four group-relative estimators of turngym's algorithm groups (grpo runs as grpo_valid).
ESTIMATORS = [ESTIMATOR_FOR["grpo"], TURN_GRPO, TURN_GIGPO, POSITIVE_GRPO]
WIDTH = 3


def _data(scores: list[float], uids: list[str], failed: list[bool]) -> DataProto:
    """Single-turn rows, the score on the last token; a failed row is the rollout's placeholder:
    one token, mask 0, score 0 (rollout/agent_loop.py `trajectory_to_output`)."""
    rewards = torch.zeros(len(scores), WIDTH)
    mask = torch.ones(len(scores), WIDTH, dtype=torch.long)
    for i, (score, bad) in enumerate(zip(scores, failed, strict=True)):
        if bad:
            mask[i] = 0
        else:
            rewards[i, -1] = score
    return DataProto.from_dict(
        tensors={"token_level_rewards": rewards, "response_mask": mask},
        non_tensors={"uid": np.array(uids, dtype=object)},
    )


def _algo(**kw) -> object:
    return OmegaConf.create(
        {"gamma": 1.0, "lam": 1.0, "norm_adv_by_std_in_grpo": True, "negative_advantage_scale": 1.0, **kw}
    )


def _advantages(estimator: str, data: DataProto, failed: list[bool], counts: dict | None = None):
    # Distinct anchors: GiGPO's step part is 0, so every estimator's answer is plain GRPO's.
    anchors = [[f"state-{i}"] for i in range(len(data))]
    token = _TURN_ANCHORS.set(anchors)
    try:
        with known_failures(failed, counts):
            return compute_advantage(data, adv_estimator=estimator, config=_algo()).batch["advantages"]
    finally:
        _TURN_ANCHORS.reset(token)


# Group a: three valid members (1, 0, 1) and a failed one; group b: one valid member and a failed one.
SCORES = [1.0, 0.0, 1.0, 0.0, 1.0, 0.0]
UIDS = ["a", "a", "a", "a", "b", "b"]
FAILED = [False, False, False, True, False, True]


def test_verl_counts_the_placeholder_in_the_group_and_keeps_a_lone_raw_score():
    """What verl 0.9.1's own GRPO does with the same batch (the behaviour before turngym's rule)."""
    adv = compute_advantage(_data(SCORES, UIDS, FAILED), adv_estimator="grpo", config=_algo()).batch[
        "advantages"
    ]
    # group a: mean of (1, 0, 1, 0) = 0.5, std 0.577 -> the wins get +0.866 and the valid loss -0.866
    assert adv[0, 0].item() == pytest.approx(0.5 / math.sqrt(1 / 3), abs=1e-4)
    # group b: (1, 0) -> the lone valid member is pushed by +0.707 against a failure
    assert adv[4, 0].item() == pytest.approx(1 / math.sqrt(2), abs=1e-4)


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_failed_members_are_left_out_and_a_lone_valid_member_gets_zero(estimator):
    data = _data(SCORES, UIDS, FAILED)
    counts: dict[str, float] = {}
    adv = _advantages(estimator, data, FAILED, counts)
    # group a over its valid members (1, 0, 1): mean 2/3, std 1/sqrt(3)
    std = math.sqrt(1 / 3)
    want = [(1 - 2 / 3) / std, (0 - 2 / 3) / std, (1 - 2 / 3) / std]
    assert adv[:3, 0].tolist() == pytest.approx(want, abs=1e-4)
    # verl's GRPO over the three valid rows alone gives the same
    valid_only = _data(SCORES[:3], UIDS[:3], FAILED[:3])
    alone = compute_advantage(valid_only, adv_estimator="grpo", config=_algo()).batch["advantages"]
    assert torch.allclose(adv[:3], alone, atol=1e-5)
    # the placeholder and group b (one valid member) get nothing
    assert adv[3:].abs().max().item() == 0.0
    assert counts == {FAILED_LEFT_OUT: 2.0, NONFINITE_LEFT_OUT: 0.0, UNDER_TWO_VALID: 1.0, GROUPS: 2.0}


@pytest.mark.parametrize("estimator", ESTIMATORS)
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_a_nonfinite_return_is_left_out_and_never_spreads(estimator, bad):
    scores, uids = [1.0, 0.0, bad, 1.0, 0.0], ["a", "a", "a", "b", "b"]
    failed = [False] * 5
    counts: dict[str, float] = {}
    adv = _advantages(estimator, _data(scores, uids, failed), failed, counts)
    assert torch.isfinite(adv).all()
    assert adv[2].abs().max().item() == 0.0
    assert adv[0, 0].item() == pytest.approx(1 / math.sqrt(2), abs=1e-4)
    assert counts[NONFINITE_LEFT_OUT] == 1.0 and counts[FAILED_LEFT_OUT] == 0.0


def test_without_failure_flags_it_is_verls_grpo_on_groups_of_two_or_more():
    gen = torch.Generator().manual_seed(0)
    scores = torch.randn(12, generator=gen).tolist()
    uids = [str(i // 3) for i in range(12)]
    data = _data(scores, uids, [False] * 12)
    ours = compute_advantage(data, adv_estimator=VALID_GRPO, config=_algo()).batch["advantages"]
    theirs = compute_advantage(data, adv_estimator="grpo", config=_algo()).batch["advantages"]
    assert torch.allclose(ours, theirs, atol=1e-6)


def test_grpo_runs_as_a_registered_estimator_and_flags_come_from_extra_fields():
    assert ESTIMATOR_FOR == {"grpo": VALID_GRPO}
    assert get_adv_estimator_fn(VALID_GRPO) is compute_valid_grpo_advantage
    flags = failed_flags(
        [EpisodeResult(failed=True).to_extra_fields(), None, EpisodeResult().to_extra_fields(), {}]
    )
    assert flags.tolist() == [True, False, False, False]
    with (
        pytest.raises(ValueError, match="failure flags for 2 rows, the batch has 3"),
        known_failures([False, True]),
    ):
        compute_valid_grpo_advantage(torch.zeros(3, 2), torch.ones(3, 2), index=np.zeros(3))


class _Queue:
    """Stands in for the TransferQueue client (a real one needs a Ray cluster); data is a real TensorDict."""

    def __init__(self, fields):
        self.fields = fields

    def kv_batch_get(self, keys, partition_id, select_fields):
        from tensordict import TensorDict

        return TensorDict(
            {k: v for k, v in self.fields.items() if k in select_fields}, batch_size=[len(keys)]
        )


def test_the_trainer_hands_the_rows_failure_flags_to_verls_call_and_runs_grpo_as_grpo_valid(monkeypatch):
    import transfer_queue
    from tensordict import NonTensorData, NonTensorStack
    from verl.trainer.ppo.v1.utils import compute_advantage_for_multi_trajectories

    from trainer.hooks.advantage_inputs import AdvantageInputsTrainerMixin

    data = _data(SCORES, UIDS, FAILED)

    class VerlStep:
        """Step 3 of verl's `_compute_advantage`, on rows it already read from the queue."""

        def _compute_advantage(self, batch, metrics):
            algorithm = self.config.algorithm
            out = compute_advantage_for_multi_trajectories(
                data, batch_keys=batch.keys, adv_estimator=algorithm.adv_estimator, config=algorithm
            )
            self.seen = (str(algorithm.adv_estimator), out.batch["advantages"])
            return batch

    class Trainer(AdvantageInputsTrainerMixin, VerlStep):
        config = OmegaConf.create({"algorithm": {**_algo(), "adv_estimator": "grpo"}})

    class Batch:
        keys = [f"{uid}_0_{i}" for i, uid in enumerate(UIDS)]
        partition_id = "train"

    extra = NonTensorStack(*(NonTensorData(EpisodeResult(failed=bad).to_extra_fields()) for bad in FAILED))
    monkeypatch.setattr(transfer_queue, "kv_batch_get", _Queue({"extra_fields": extra}).kv_batch_get)
    trainer, metrics = Trainer(), {}
    trainer._compute_advantage(Batch(), metrics)
    name, adv = trainer.seen
    assert name == VALID_GRPO and trainer.config.algorithm.adv_estimator == "grpo"  # put back after the call
    assert adv[0, 0].item() == pytest.approx((1 - 2 / 3) / math.sqrt(1 / 3), abs=1e-4)
    assert adv[3:].abs().max().item() == 0.0
    assert metrics[FAILED_LEFT_OUT] == 2.0 and metrics[UNDER_TWO_VALID] == 1.0


def test_the_trainer_reads_the_rows_once_and_hands_a_turn_estimator_both_failures_and_turns(monkeypatch):
    import transfer_queue
    from tensordict import NonTensorData, NonTensorStack

    from rollout.episode_result import TurnSpan
    from trainer.estimators.turns import _TURN_SPANS
    from trainer.estimators.valid_groups import _FAILED
    from trainer.hooks.advantage_inputs import AdvantageInputsTrainerMixin

    class VerlStep:
        def _compute_advantage(self, batch, metrics):
            self.seen = (str(self.config.algorithm.adv_estimator), _FAILED.get().tolist(), _TURN_SPANS.get())
            return batch

    class Trainer(AdvantageInputsTrainerMixin, VerlStep):
        config = OmegaConf.create({"algorithm": {**_algo(), "adv_estimator": TURN_GRPO}})

    class Batch:
        keys = ["a_0_0", "a_0_1"]
        partition_id = "train"

    rows = [EpisodeResult(turns=(TurnSpan(0, 2, 1.0),)), EpisodeResult(failed=True)]
    extra = NonTensorStack(*(NonTensorData(r.to_extra_fields()) for r in rows))
    queue = _Queue({"extra_fields": extra})
    calls = []
    monkeypatch.setattr(
        transfer_queue, "kv_batch_get", lambda **kw: calls.append(kw) or queue.kv_batch_get(**kw)
    )
    trainer, metrics = Trainer(), {}
    trainer._compute_advantage(Batch(), metrics)
    assert len(calls) == 1
    name, failed, spans = trainer.seen
    assert name == TURN_GRPO and failed == [False, True] and spans[0] == [(0, 2)]
    assert _TURN_SPANS.get() is None and _FAILED.get() is None  # only for verl's call
