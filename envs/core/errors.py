"""Errors raised by the envs package."""

from __future__ import annotations

from gymnasium.error import ResetNeeded as _GymResetNeeded


class InvalidAction(ValueError):
    """An action the env cannot understand; its message is shown to the agent."""


class UnknownEnvError(KeyError):
    """`make` was given an id that is not registered."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown env"


class ResetNeeded(_GymResetNeeded):
    """`step` was called before the first `reset` (Gymnasium's `OrderEnforcing` raises the same type).

    A programming error of the caller, never a consequence of model text.
    """


class InvalidOptions(ValueError, TypeError):
    """`reset(options=...)` got a non-dict, an unknown key or a bad value; the message names the valid ones.

    A ValueError (bad keys and values) that is also a TypeError (options that are not a dict).
    """
