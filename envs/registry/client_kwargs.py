"""Which constructor kwargs a client of a served env (or a dataset row) may choose; the operator sets the rest.

An env declares its client-safe kwargs in a `client_kwargs` class attribute: game-level choices such as
`difficulty`. Everything else (isolation, sandbox backends and endpoints, tool files, imports, paths,
opponents, engines, timeouts, memory, grading) belongs to whoever runs the process: the operator of
`python -m envs serve`, or the person running the trainer with their own config. `max_turns` and
`format_penalty` go through too, but only to make an episode stricter: fewer turns, dearer format errors,
and within fixed bounds: `format_penalty` in [0, MAX_FORMAT_PENALTY] (10, ten times a full reward) and
`max_turns` in [1, MAX_TURNS] (10000), whatever the env's own limit. An operator's own value over a
bound stays reachable: a client may send it, never more. A declared kwarg that is a number is held to the
env table's bound for it (`envs.core.number_bounds.ENV_NUMBERS`, e.g. textarena's `seat`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from envs.core.number_bounds import CLIENT_MAX_FORMAT_PENALTY, CLIENT_MAX_TURNS, env_number_problem

#: What every env takes from a client: how replies are read follows the client's chat template.
COMMON_CLIENT_KWARGS = ("tool_call_format",)
#: The declaration of an env class that has none of its own.
DEFAULT_CLIENT_KWARGS = ("difficulty",)
#: `envs.make` options a client may only tighten: a longer episode or a cheaper format error pays more.
TIGHTEN_ONLY = ("max_turns", "format_penalty")
#: The dearest format error a client (or a dataset row) may ask for: beyond it one bad reply outweighs any
#: return an env pays, and 1e308 made a return -inf and GRPO advantages NaN.
MAX_FORMAT_PENALTY = CLIENT_MAX_FORMAT_PENALTY
#: The most turns a client may ask for, also where the env sets no limit of its own.
MAX_TURNS = CLIENT_MAX_TURNS
# JSON scalars only: game-level choices are names and numbers, never objects that could carry a config.
_SCALARS = (str, int, float, bool, type(None))


class ClientKwargError(ValueError):
    """A kwarg a client may not set (or not to that value); `key` names it."""

    def __init__(self, key: str, message: str, operator_only: bool = False):
        super().__init__(message)
        #: `operator_only`: the key is not the client's at all (as opposed to a value out of bounds).
        self.key, self.operator_only = key, operator_only


def declared_client_kwargs(spec: Any) -> frozenset[str]:
    """The constructor kwargs the env of `spec` takes from clients (its class's `client_kwargs`).

    Args:
        spec: a registered `EnvSpec`.

    Returns:
        The declared names plus `COMMON_CLIENT_KWARGS`; `DEFAULT_CLIENT_KWARGS` stands in when the env's
        class (or factory) declares nothing.
    """
    declared = getattr(spec.load(), "client_kwargs", None)
    if declared is None:
        declared = DEFAULT_CLIENT_KWARGS
    return frozenset(declared) | frozenset(COMMON_CLIENT_KWARGS)


def check_client_kwargs(
    spec: Any, kwargs: Mapping[str, Any], operator: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """`kwargs` as a new dict if a client may send them for `spec`'s env, else `ClientKwargError` naming a key.

    Args:
        spec: the registered `EnvSpec` the client asked for.
        kwargs: what the client sent (constructor kwargs plus `max_turns` / `format_penalty`).
        operator: the kwargs the operator set for this env; a client cannot override any of them, and
            `max_turns` / `format_penalty` are bounded by the operator's (else the spec's) values.

    Returns:
        The checked kwargs, with `max_turns` / `format_penalty` left out when None.
    """
    operator = operator or {}
    allowed = declared_client_kwargs(spec)
    out: dict[str, Any] = {}
    for key, value in kwargs.items():
        shown = repr(key)[:80]
        if not isinstance(key, str):
            raise ClientKwargError(str(key), f"{spec.id}: kwarg names must be strings, got {shown}")
        if key in TIGHTEN_ONLY:
            if value is not None:
                out[key] = _tightened(spec, key, value, operator)
            continue
        if key in operator:
            raise ClientKwargError(
                key, f"{spec.id}: {shown} is set by the operator; a client cannot change it"
            )
        if key not in allowed:
            raise ClientKwargError(
                key,
                f"{spec.id}: {shown} is not a client option (clients may set: {', '.join(sorted(allowed))})",
                operator_only=True,
            )
        if not isinstance(value, _SCALARS) or (isinstance(value, float) and not math.isfinite(value)):
            raise ClientKwargError(
                key,
                f"{spec.id}: {key}= must be a string, number, boolean or null, got {type(value).__name__}",
            )
        problem = env_number_problem(key, value)
        if problem is not None:
            raise ClientKwargError(key, f"{spec.id}: {problem}")
        out[key] = value
    return out


def _tightened(spec: Any, key: str, value: Any, operator: Mapping[str, Any]) -> int | float:
    if key == "max_turns":
        limit = operator.get("max_turns", spec.max_turns)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ClientKwargError(key, f"{spec.id}: max_turns must be a whole number >= 1, got {value!r}")
        if limit is None and value > MAX_TURNS:
            raise ClientKwargError(
                key,
                f"{spec.id}: max_turns={_short(value)} is over the bound of {MAX_TURNS}; ask for fewer turns",
            )
        if limit is not None and value > limit:
            raise ClientKwargError(
                key,
                f"{spec.id}: max_turns={_short(value)} is over this env's limit of {limit}; a client may only lower it",
            )
        return value
    floor = operator.get("format_penalty", spec.format_penalty)
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        raise ClientKwargError(key, f"{spec.id}: format_penalty must be a finite number, got {_short(value)}")
    if value < floor:
        raise ClientKwargError(
            key,
            f"{spec.id}: format_penalty={value} is under this env's {floor}; a client may only raise it",
        )
    ceiling = max(MAX_FORMAT_PENALTY, floor)
    if value > ceiling:
        raise ClientKwargError(
            key,
            f"{spec.id}: format_penalty={_short(value)} is over the bound of {ceiling}; "
            f"send a value from {floor} to {ceiling}",
        )
    return value


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
