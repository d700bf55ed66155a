"""The interaction registry: `register`, `make`, `list_interactions` (entry points load lazily)."""

from __future__ import annotations

import difflib
import importlib
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from interactions.interaction import Interaction


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

    def load(self) -> Callable[..., Interaction]:
        """The class or factory behind `entry_point`."""
        if callable(self.entry_point):
            return self.entry_point
        module, _, attr = self.entry_point.partition(":")
        target: Any = importlib.import_module(module)
        for part in attr.split("."):
            target = getattr(target, part)
        return target


_REGISTRY: dict[str, InteractionSpec] = {}


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
    if isinstance(entry_point, str) and ":" not in entry_point:
        raise ValueError(f"entry point {entry_point!r} must be 'module:attr' or a callable")
    found = InteractionSpec(name, entry_point, dict(config), description, source)
    earlier = _REGISTRY.get(name)
    if earlier is not None and earlier != found:  # loading the same YAML twice changes nothing
        warnings.warn(
            f"Overriding interaction {name!r} already in the registry (entry point "
            f"{earlier.entry_point!r} replaced by {entry_point!r}).",
            stacklevel=2,
        )
    _REGISTRY[name] = found
    return found


def spec(name: str) -> InteractionSpec:
    """The spec registered under `name`; unknown names raise an error naming the closest ones."""
    try:
        return _REGISTRY[name]
    except KeyError:
        close = difflib.get_close_matches(name, list(_REGISTRY), n=3, cutoff=0.5)
        hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise UnknownInteractionError(
            f"no interaction registered as {name!r}.{hint} Registered: {', '.join(sorted(_REGISTRY))}."
        ) from None


def list_interactions() -> list[InteractionSpec]:
    """All registered interaction specs, sorted by name."""
    return sorted(_REGISTRY.values(), key=lambda s: s.name)


def make(name: str, **config: Any) -> Interaction:
    """Build the interaction registered as `name`; `config` overrides its registered defaults."""
    found = spec(name)
    made = found.load()(**{**found.config, **config})
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
