"""Per training step: how many episodes failed (left out of the batch) and how many were replayed.

A failed episode enters the batch only as a masked-out placeholder (loss mask 0, no gradient; see
`rollout.agent_loop.trajectory_to_output`); a replayed one moved to a live env server when its own died
(`rollout.env_servers`) and trains like any other.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rollout.env_servers import REPLAYED_KEY

FAILED_METRIC = "turngym/episodes_failed"
REPLAYED_METRIC = "turngym/episodes_replayed"


def failure_counts(extra_fields: Sequence[dict[str, Any] | None]) -> dict[str, float]:
    """Counts of failed and replayed episodes among the batch's episodes' extra_fields.

    Args:
        extra_fields: one dict (or None) per episode of the batch.

    Returns:
        `{FAILED_METRIC: n, REPLAYED_METRIC: m}`.
    """
    fields = [f or {} for f in extra_fields]
    return {
        FAILED_METRIC: float(sum(bool(f.get("turngym_failed")) for f in fields)),
        REPLAYED_METRIC: float(sum(bool(f.get(REPLAYED_KEY)) for f in fields)),
    }
