"""What an env's turn logic returns before the base class adds bookkeeping."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class StepResult:
    """Messages to append, the reward for this turn, whether the episode ended, and extra info."""

    messages: list[dict[str, Any]]
    reward: float = 0.0
    terminated: bool = False
    truncated: bool = False
    info: dict[str, Any] = field(default_factory=dict)
