"""The per-turn limits of a TextEnv: the longest reply it reads (and so its action space), and how many tool
calls and how much tool time one turn may use."""

from __future__ import annotations

from typing import Any

from envs.reset_options import is_int
from envs.spaces import AssistantAction, ChatMessages

DEFAULT_MAX_TOOL_CALLS_PER_TURN = 8
DEFAULT_MAX_TOOL_TIME_S = 30.0
DEFAULT_MAX_ACTION_CHARS = 32768


def checked_action_chars(value: Any) -> int:
    """`max_action_chars` as an int; raises ValueError unless it is a whole number >= 1."""
    if not is_int(value) or value < 1:
        raise ValueError(f"max_action_chars must be a whole number >= 1, got {value!r}")
    return int(value)


def checked_tool_calls(value: Any) -> int | None:
    """`max_tool_calls_per_turn` (None: no cap); raises ValueError unless a whole number >= 1 or None."""
    if value is not None and (not is_int(value) or value < 1):
        raise ValueError(f"max_tool_calls_per_turn must be a whole number >= 1 or None, got {value!r}")
    return value


def checked_tool_time(value: Any) -> float | None:
    """`max_tool_time_s` as a float (None: no budget); raises ValueError unless a number > 0 or None."""
    if value is None:
        return None
    if not isinstance(value, int | float) or isinstance(value, bool) or not value > 0:
        raise ValueError(f"max_tool_time_s must be a number of seconds > 0 or None, got {value!r}")
    return float(value)


class TurnLimits:
    """Mixin for TextEnv: `set_turn_limits`, and the spaces (the action space holds `max_action_chars`).

    The spaces are built on first use: most envs made per episode never read them.
    """

    max_action_chars: int = DEFAULT_MAX_ACTION_CHARS
    max_tool_calls_per_turn: int | None = DEFAULT_MAX_TOOL_CALLS_PER_TURN
    max_tool_time_s: float | None = DEFAULT_MAX_TOOL_TIME_S
    _observation_space: ChatMessages | None = None
    _action_space: AssistantAction | None = None

    def set_turn_limits(
        self,
        *,
        max_action_chars: int | None = None,
        max_tool_calls_per_turn: int | None | Any = ...,
        max_tool_time_s: float | None | Any = ...,
    ) -> None:
        """Change the reply size limit and the per-turn tool limits (None: no limit; omitted: unchanged).

        Args:
            max_action_chars: The longest reply read (None: unchanged).
            max_tool_calls_per_turn: Calls past this many in one turn are not run (None: no cap).
            max_tool_time_s: Seconds of tool time one turn may use in all (None: no budget).

        Example:
            >>> import envs
            >>> env = envs.make("guess-number-v0")
            >>> env.set_turn_limits(max_tool_calls_per_turn=2, max_tool_time_s=5)
            >>> env.unwrapped.max_tool_calls_per_turn, env.unwrapped.max_tool_time_s
            (2, 5.0)
        """
        if max_action_chars is not None:
            self.max_action_chars = checked_action_chars(max_action_chars)
            self._action_space = None  # a new one, with the new limit, on next use
        if max_tool_calls_per_turn is not ...:
            self.max_tool_calls_per_turn = checked_tool_calls(max_tool_calls_per_turn)
        if max_tool_time_s is not ...:
            self.max_tool_time_s = checked_tool_time(max_tool_time_s)

    @property
    def observation_space(self) -> ChatMessages:
        """Lists of chat messages (`envs.spaces.ChatMessages`)."""
        if self._observation_space is None:
            self._observation_space = ChatMessages()
        return self._observation_space

    @observation_space.setter
    def observation_space(self, space: ChatMessages) -> None:
        self._observation_space = space

    @property
    def action_space(self) -> AssistantAction:
        """Assistant turns within `max_action_chars` (`envs.spaces.AssistantAction`)."""
        if self._action_space is None:
            self._action_space = AssistantAction(self.max_action_chars)
        return self._action_space

    @action_space.setter
    def action_space(self, space: AssistantAction) -> None:
        self._action_space = space
