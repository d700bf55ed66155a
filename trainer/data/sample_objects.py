"""Per-sample Python objects (e.g. ``extra_fields``) read back from a TransferQueue batch."""

from __future__ import annotations

from typing import Any


def sample_objects(value: Any) -> list:
    """The objects of a per-sample field as a list, whichever container TransferQueue returned.

    A NonTensorStack gives its objects through ``.tolist()`` (iterating it yields wrappers); the
    queue's own plain list type has no ``tolist`` and is already the objects.
    """
    return list(value.tolist()) if hasattr(value, "tolist") else list(value)
