"""One field of a step's TransferQueue batch, read by turngym's additions to verl's trainer."""

from __future__ import annotations

from typing import Any


def batch_field(tq: Any, batch: Any, name: str) -> Any:
    """One field of a TransferQueue batch, or None when the batch's samples have no such field.

    TransferQueue leaves a field the samples lack out of the result (``BatchMeta.select_fields``), so
    reading it raises KeyError; that is the only failure treated as "no data". Anything else (the
    queue unreachable, keys gone) is a real error and stops the run with verl's own message.
    """
    data = tq.kv_batch_get(keys=batch.keys, partition_id=batch.partition_id, select_fields=[name])
    try:
        return data.pop(name)  # a tensor, or a NonTensorStack (`.tolist()`) for per-sample objects
    except KeyError:
        return None
