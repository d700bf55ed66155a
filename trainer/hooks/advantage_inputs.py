"""What verl's advantage call cannot pass the estimators, handed over for that call (a trainer mixin).

verl's `_compute_advantage` fetches a fixed list of fields from TransferQueue and hands a registered
estimator tensors and ``uid`` only. This mixin reads the rows' `extra_fields` for the same keys (same
row order) as `EpisodeResult`s, once, and for the duration of verl's own call makes visible:

- which rows failed (`known_failures`, trainer/estimators/valid_groups.py), for every group-relative
  estimator; the group counts go into the step's metrics. Under the name ``grpo`` verl skips its
  registry, so the call runs as ``grpo_valid`` (``ESTIMATOR_FOR``, trainer/estimators/grpo_valid.py)
  and the name is put back afterwards;
- for `turn_grpo` and `turn_gigpo`, the rollout's turn spans and anchors (`known_turns`,
  trainer/estimators/turns.py); `turn_gigpo`'s step-group sizes go into the metrics.
"""

from __future__ import annotations

import contextlib
from typing import Any

from trainer.data.sample_objects import sample_objects
from trainer.estimators.grpo_valid import ESTIMATOR_FOR
from trainer.estimators.turn_gigpo import TURN_GIGPO
from trainer.estimators.turn_grpo import TURN_GRPO
from trainer.estimators.turns import known_turns, rollout_turns
from trainer.estimators.valid_groups import failed_flags, known_failures

# The estimators that read the rollout's turns.
TURN_ESTIMATORS = (TURN_GRPO, TURN_GIGPO)


class AdvantageInputsTrainerMixin:
    """Mix into verl's v1 trainer: estimators see which rows failed and, for the turn estimators, the
    rollout's turns; the counts they make go into the step's metrics."""

    def _compute_advantage(self, batch: Any, metrics: dict) -> Any:
        import transfer_queue as tq

        data = tq.kv_batch_get(
            keys=batch.keys, partition_id=batch.partition_id, select_fields=["extra_fields"]
        )
        extra_fields = sample_objects(data.pop("extra_fields"))
        algorithm = self.config.algorithm
        name = str(algorithm.adv_estimator)
        counts: dict[str, float] = {}
        stats: dict[str, float] = {}
        with contextlib.ExitStack() as stack:
            stack.enter_context(known_failures(failed_flags(extra_fields), counts))
            if name in TURN_ESTIMATORS:
                stack.enter_context(known_turns(*rollout_turns(extra_fields), stats))
            if name in ESTIMATOR_FOR:
                algorithm.adv_estimator = ESTIMATOR_FOR[name]
            try:
                result = super()._compute_advantage(batch, metrics)
            finally:
                algorithm.adv_estimator = name
        metrics.update(counts)
        metrics.update(stats)
        return result
