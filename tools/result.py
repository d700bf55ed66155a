"""What a tool call returns to the environment."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ToolResult:
    """Text for the model plus optional reward, metrics and an episode-ending flag."""

    content: str
    is_error: bool = False
    reward: float | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    terminate: bool = False  # a tool such as `submit` ends the episode
    answer: str | None = None  # what `submit` submitted

    @classmethod
    def error(cls, message: str, **metrics: float) -> ToolResult:
        """An error result whose text tells the model what went wrong."""
        return cls(content=message, is_error=True, metrics=dict(metrics))
