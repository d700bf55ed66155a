"""EpisodeLimits: the turn limit and the charge for unreadable replies, the layer `envs.make` applies."""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from envs.core.number_bounds import ENV_NUMBERS, env_number_problem
from envs.wrappers.text_wrapper import TextWrapper

_MAX_PENALTY = ENV_NUMBERS["format_penalty"].high
_MAX_TURNS = ENV_NUMBERS["max_turns"].high


class EpisodeLimits(TextWrapper):
    """Truncate after `max_turns` turns and charge `penalty` for each reply the env could not read.

    Every setting is optional: `max_turns=None` sets no turn limit (`MaxTurns` is this with only a limit),
    `penalty=None` leaves unreadable replies alone (`ActionFormat` is this with only the format settings).
    An unreadable reply is one whose step info carries a `format_error`; it costs `penalty`
    (`info["format_penalty"]`), `message` (with `{error}`) replaces what the agent is told, and
    `max_consecutive` such replies in a row truncate the episode (`info["truncated_reason"] =
    "format_errors"`). Reaching the turn limit sets `info["truncated_reason"] = "max_turns"`.

    Args:
        env: the env to wrap (a `TextEnv`, or any env whose step info marks unreadable replies).
        max_turns: assistant turns before the episode is truncated (>= 1), or None for no limit.
        penalty: subtracted from the reward of an unreadable reply (>= 0), or None to charge nothing.
        message: the agent's feedback for an unreadable reply, `{error}` standing for the problem.
        max_consecutive: unreadable replies in a row that truncate the episode, or None.

    >>> import envs
    >>> env = EpisodeLimits(envs.make("guess-number-v0").unwrapped, max_turns=2, penalty=0.5)
    >>> _ = env.reset(seed=0)
    >>> _, reward, _, truncated, info = env.step("no idea")
    >>> reward, truncated, info["format_penalty"]
    (-0.5, False, 0.5)
    >>> _, _, _, truncated, info = env.step("50")
    >>> truncated, info["truncated_reason"]
    (True, 'max_turns')
    """

    def __init__(
        self,
        env: gym.Env,
        *,
        max_turns: int | None = None,
        penalty: float | None = 0.1,
        message: str | None = None,
        max_consecutive: int | None = None,
    ):
        if penalty is not None and not penalty >= 0:
            raise ValueError(f"penalty must be >= 0 (it is subtracted), got {penalty}")
        if max_turns is not None and max_turns < 1:
            raise ValueError(f"max_turns must be >= 1, got {max_turns}")
        if max_consecutive is not None and max_consecutive < 1:
            raise ValueError(f"max_consecutive must be >= 1, got {max_consecutive}")
        # The table's bounds (envs/core/number_bounds.py): finite, no bool, no absurd charge or limit.
        if penalty is not None and (isinstance(penalty, bool) or not penalty <= _MAX_PENALTY):
            raise ValueError(f"{type(self).__name__}: {env_number_problem('format_penalty', penalty)}")
        if max_turns is not None and (
            isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns > _MAX_TURNS
        ):
            raise ValueError(f"{type(self).__name__}: {env_number_problem('max_turns', max_turns)}")
        if penalty is None and (message is not None or max_consecutive is not None):
            raise ValueError(
                "message and max_consecutive act on unreadable replies: give a penalty (0 for none)"
            )
        super().__init__(env)
        self.max_turns = max_turns
        self.penalty = penalty
        self.message = message
        self.max_consecutive = max_consecutive
        self._turns = 0  # turns of this episode
        self._consecutive = 0  # unreadable replies in a row

    def constructor_kwargs(self) -> dict[str, Any]:
        """This layer's settings, as `env.spec` records them."""
        return {
            "max_turns": self.max_turns,
            "penalty": self.penalty,
            "message": self.message,
            "max_consecutive": self.max_consecutive,
        }

    def on_reset(self, messages: list, info: dict) -> tuple[list, dict]:
        """Start counting turns and unreadable replies from zero."""
        self._turns = 0
        self._consecutive = 0
        return messages, info

    def on_step(
        self, messages: list, reward: float, terminated: bool, truncated: bool, info: dict
    ) -> tuple[list, float, bool, bool, dict]:
        """Charge an unreadable reply, then count the turn: the order of the info keys of the two settings."""
        if self.penalty is not None:
            error = info.get("format_error")
            if error is not None:
                messages, reward, truncated = self._charge(
                    error, messages, reward, terminated, truncated, info
                )
            elif self._consecutive:
                self._consecutive = 0
        max_turns = self.max_turns
        if max_turns is not None:
            turns = self._turns = self._turns + 1
            if turns >= max_turns and not terminated and not truncated:
                truncated = True
                info["truncated_reason"] = "max_turns"
        return messages, reward, terminated, truncated, info

    def _charge(
        self, error: str, messages: list, reward: float, terminated: bool, truncated: bool, info: dict
    ) -> tuple[list, float, bool]:
        # An unreadable reply: the penalty, the custom message, and the count of such replies in a row.
        self._consecutive += 1
        reward -= self.penalty
        info["format_penalty"] = self.penalty
        if self.message is not None:
            messages = [{"role": "user", "content": self.message.format(error=error)}]
        if self.max_consecutive is not None and self._consecutive >= self.max_consecutive and not terminated:
            truncated = True
            info["truncated_reason"] = "format_errors"
        return messages, reward, truncated
