"""Errors raised by the envs package."""

from __future__ import annotations


class InvalidAction(ValueError):
    """An action the env cannot understand; its message is shown to the agent."""


class UnknownEnvError(KeyError):
    """`make` was given an id that is not registered."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown env"
