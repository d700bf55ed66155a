"""What an env's turn logic returns before the base class adds bookkeeping."""

from __future__ import annotations

from operator import itemgetter
from typing import Any

_new_tuple = tuple.__new__


class StepResult(tuple):
    """Messages to append, the reward for this turn, whether the episode ended, and extra info.

    A named 5-tuple `(messages, reward, terminated, truncated, info)`, the shape of a Gymnasium step;
    turn logic on a hot path may return that plain tuple instead, which skips building this object.
    Fields are read-only (`replace` makes a changed copy); `info` is a dict of its own, which may be
    added to.
    """

    __slots__ = ()

    def __new__(
        cls,
        messages: list[dict[str, Any]],
        reward: float = 0.0,
        terminated: bool = False,
        truncated: bool = False,
        info: dict[str, Any] | None = None,
    ) -> StepResult:
        return _new_tuple(cls, (messages, reward, terminated, truncated, {} if info is None else info))

    messages = property(itemgetter(0), doc="Messages to append to the conversation.")
    reward = property(itemgetter(1), doc="This turn's reward.")
    terminated = property(itemgetter(2), doc="Whether the episode ended by the env's own rules.")
    truncated = property(itemgetter(3), doc="Whether the episode was cut short.")
    info = property(itemgetter(4), doc="Extra information about the turn.")

    def replace(self, **changes: Any) -> StepResult:
        """A copy with the given fields changed."""
        messages, reward, terminated, truncated, info = self
        fields = {
            "messages": messages,
            "reward": reward,
            "terminated": terminated,
            "truncated": truncated,
            "info": info,
        }
        unknown = set(changes) - set(fields)
        if unknown:
            raise TypeError(f"StepResult has no field {', '.join(sorted(unknown))}")
        fields.update(changes)
        return StepResult(**fields)

    def __getnewargs__(self) -> tuple:
        return tuple(self)

    def __repr__(self) -> str:
        messages, reward, terminated, truncated, info = self
        return (
            f"StepResult(messages={messages!r}, reward={reward!r}, terminated={terminated!r}, "
            f"truncated={truncated!r}, info={info!r})"
        )
