"""The interaction registry: `register`, `make`, `list_interactions` (entry points load lazily)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from interactions.interaction import Interaction
from turngym.common.registration import Registry, check_entry_point, load_entry_point


class UnknownInteractionError(KeyError):
    """No interaction is registered under the requested name."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


@dataclass(frozen=True)
class InteractionSpec:
    """How to build one registered interaction: an entry point and its default config."""

    name: str
    entry_point: str | Callable[..., Interaction]
    config: dict[str, Any] = field(default_factory=dict)
    description: str = ""
    source: str = ""  # where it was registered from (a YAML path), for error messages

    @property
    def kwargs(self) -> dict[str, Any]:
        """Constructor defaults (`config`), under the name every `turngym.common.registration.Registry` spec uses."""
        return self.config

    def load(self) -> Callable[..., Interaction]:
        """The class or factory behind `entry_point`."""
        return load_entry_point(self.entry_point)


_REGISTRY: Registry[InteractionSpec] = Registry("interaction", unknown_error=UnknownInteractionError)


def register(
    name: str,
    entry_point: str | Callable[..., Interaction],
    *,
    description: str = "",
    source: str = "",
    **config: Any,
) -> InteractionSpec:
    """Register an interaction under `name`; `config` becomes its constructor defaults.

    Registering a name again with a different spec replaces the earlier one with a warning.
    """
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"an interaction name must be a non-empty string, got {name!r}")
    check_entry_point(entry_point)
    return _REGISTRY.add(name, InteractionSpec(name, entry_point, dict(config), description, source))


def spec(name: str) -> InteractionSpec:
    """The spec registered under `name`; unknown names raise an error naming the closest ones."""
    return _REGISTRY.spec(name)


def list_interactions() -> list[InteractionSpec]:
    """All registered interaction specs, sorted by name."""
    return _REGISTRY.list()


def make(name: str, **config: Any) -> Interaction:
    """Build the interaction registered as `name`; `config` overrides its registered defaults."""
    found = spec(name)
    made = _REGISTRY.make(name, **config)
    if not isinstance(made, Interaction):
        raise TypeError(
            f"interaction {name!r}: entry point {found.entry_point!r} built a {type(made).__name__}, "
            "not an interactions.Interaction"
        )
    made.name = name
    return made


register(
    "answer-feedback",
    "interactions.answer_feedback:AnswerFeedback",
    description="Checks a final answer, gives graded hints, stops when right or out of tries.",
)
register(
    "scripted-user",
    "interactions.scripted_user:ScriptedUser",
    description="A user with a hidden goal whose preferences the agent must find out by asking.",
)
register(
    "llm-user",
    "interactions.llm_user:LLMUser",
    description="A user role-played by a language model through any rollout engine.",
)
