"""The per-turn limits of a TextEnv, their defaults and checks: the longest reply it reads (and so its action
space), and how many tool calls and how much tool time one turn may use (kept by `envs.tool_layer.env_tools.EnvTools`)."""

from __future__ import annotations

from typing import Any

from envs.core.number_bounds import ENV_NUMBERS, env_number_problem
from envs.core.reset_options import is_int

DEFAULT_MAX_TOOL_CALLS_PER_TURN = 8
DEFAULT_MAX_TOOL_TIME_S = 30.0
DEFAULT_MAX_ACTION_CHARS = 32768

# The upper bounds are the table's (envs/core/number_bounds.py).
_MAX_ACTION_CHARS = ENV_NUMBERS["max_action_chars"].high
_MAX_TOOL_CALLS = ENV_NUMBERS["max_tool_calls_per_turn"].high
_MAX_TOOL_TIME_S = ENV_NUMBERS["max_tool_time_s"].high

# _DEFAULTS_PASS: the default objects themselves (not equal values: 8.0 must still be refused) pass the
# checks at once. Every env is built with them, once per episode in verl's agent loop, and the three
# checks measured 0.7 us of a 2.3 us `envs.make` (bench/env_throughput.py).


def checked_action_chars(value: Any) -> int:
    """`max_action_chars` as an int; raises ValueError unless it is a whole number >= 1."""
    if value is DEFAULT_MAX_ACTION_CHARS:  # see `_DEFAULTS_PASS`
        return value
    if not is_int(value) or value < 1:
        raise ValueError(f"max_action_chars must be a whole number >= 1, got {value!r}")
    if value > _MAX_ACTION_CHARS:
        raise ValueError(env_number_problem("max_action_chars", value))
    return int(value)


def checked_tool_calls(value: Any) -> int | None:
    """`max_tool_calls_per_turn` (None: no cap); raises ValueError unless a whole number >= 1 or None."""
    if value is DEFAULT_MAX_TOOL_CALLS_PER_TURN:  # see `_DEFAULTS_PASS`
        return value
    if value is not None and (not is_int(value) or value < 1):
        raise ValueError(f"max_tool_calls_per_turn must be a whole number >= 1 or None, got {value!r}")
    if value is not None and value > _MAX_TOOL_CALLS:
        raise ValueError(env_number_problem("max_tool_calls_per_turn", value))
    return value


def checked_tool_time(value: Any) -> float | None:
    """`max_tool_time_s` as a float (None: no budget); raises ValueError unless a number > 0 or None."""
    if value is None or value is DEFAULT_MAX_TOOL_TIME_S:  # see `_DEFAULTS_PASS`
        return value
    if not isinstance(value, int | float) or isinstance(value, bool) or not value > 0:
        raise ValueError(f"max_tool_time_s must be a number of seconds > 0 or None, got {value!r}")
    if value > _MAX_TOOL_TIME_S:  # inf included: a turn's tools would never be stopped
        raise ValueError(env_number_problem("max_tool_time_s", value))
    return float(value)
