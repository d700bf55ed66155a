"""The small schema language of `TextEnv.reset_options`: declared keys, each with the values it accepts.

A declaration maps each key to a type (`int`, `str`), a tuple of types (`(int, str)`), or a tuple of
allowed values (`("easy", "medium", "hard")`); None or `object` accepts anything. `int` refuses bools
(never a sensible count, index or seed) and `float` takes ints.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from envs.core.errors import InvalidOptions


def check_options(owner: str, declared: dict[str, Any] | None, options: Any) -> dict[str, Any]:
    """`options` as a new dict, checked against `declared`; raises InvalidOptions naming the valid ones.

    Args:
        owner: Who reads the options (the env's class name), for the error message.
        declared: The accepted keys and their specs; None accepts any dict.
        options: What the caller passed to `reset(options=...)`.

    Returns:
        A new dict with the same items (empty for None).

    Example:
        >>> check_options("Game", {"difficulty": ("easy", "hard")}, {"difficulty": "easy"})
        {'difficulty': 'easy'}
        >>> check_options("Game", {"difficulty": ("easy", "hard")}, {"difficulty": "medium"})
        Traceback (most recent call last):
        ...
        envs.core.errors.InvalidOptions: Game: reset option 'difficulty' must be one of 'easy', 'hard', got 'medium'
    """
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise InvalidOptions(
            f"{owner}: reset options must be a dict (or None), got {type(options).__name__}; "
            f"valid options: {describe_options(declared)}"
        )
    options = dict(options)
    if declared is None:
        return options
    unknown = [k for k in options if k not in declared]
    if unknown:
        shown = ", ".join(short_repr(k) for k in unknown[:5])
        raise InvalidOptions(
            f"{owner}: unknown reset option{'s' if len(unknown) > 1 else ''} {shown}; "
            f"valid options: {describe_options(declared)}"
        )
    for key, value in options.items():
        problem = _option_value_problem(declared[key], value)
        if problem is not None:
            raise InvalidOptions(f"{owner}: reset option {key!r} {problem}")
    return options


def describe_options(declared: dict[str, Any] | None) -> str:
    """Human-readable list of declared reset options, e.g. "difficulty (one of 'easy', 'hard'), index (int)"."""
    if declared is None:
        return "any (this env declares none)"
    if not declared:
        return "none (this env takes no reset options)"
    return ", ".join(f"{key} ({_describe_spec(spec)})" for key, spec in declared.items())


def is_int(value: Any) -> bool:
    """Whether `value` is a whole number and not a bool."""
    return isinstance(value, int) and not isinstance(value, bool)


def short_repr(value: Any, limit: int = 80) -> str:
    """`repr(value)` cut to `limit` characters; never raises."""
    try:
        text = repr(value)
    except Exception:  # RecursionError on absurd nesting, or a broken __repr__
        return f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _describe_spec(spec: Any) -> str:
    if spec is None or spec is object:
        return "any value"
    if isinstance(spec, type):
        return spec.__name__
    if _is_type_tuple(spec):
        return " or ".join(t.__name__ for t in spec)
    return "one of " + ", ".join(repr(v) for v in spec)


def _is_type_tuple(spec: Any) -> bool:
    return isinstance(spec, tuple) and bool(spec) and all(isinstance(t, type) for t in spec)


def _matches_type(value: Any, kind: type) -> bool:
    # bool is an int to Python but never a sensible count, index or seed.
    if kind is int:
        return is_int(value)
    if kind is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    return isinstance(value, kind)


def _option_value_problem(spec: Any, value: Any) -> str | None:
    if spec is None or spec is object:
        return None
    if isinstance(spec, type) or _is_type_tuple(spec):
        kinds = (spec,) if isinstance(spec, type) else spec
        if any(_matches_type(value, k) for k in kinds):
            return None
        return f"must be {_describe_spec(spec)}, got {type(value).__name__} {short_repr(value)}"
    try:
        allowed = any(type(value) is type(v) and value == v for v in spec)
    except Exception:  # a value whose == misbehaves is simply not one of the choices
        allowed = False
    return None if allowed else f"must be {_describe_spec(spec)}, got {short_repr(value)}"
