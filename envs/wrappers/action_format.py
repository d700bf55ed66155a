"""ActionFormat: `EpisodeLimits` with only the settings for replies the env could not read."""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from envs.wrappers.episode_limits import EpisodeLimits


class ActionFormat(EpisodeLimits):
    """Subtract `penalty` for each unreadable reply; `message` (with `{error}`) replaces what the agent is told.

    With `max_consecutive`, that many unreadable replies in a row truncate the episode. No turn limit.

    Args:
        env: the env to wrap.
        penalty: subtracted from the reward of an unreadable reply (>= 0).
        message: the agent's feedback for an unreadable reply, `{error}` standing for the problem.
        max_consecutive: unreadable replies in a row that truncate the episode, or None.

    >>> import envs
    >>> env = ActionFormat(envs.make("guess-number-v0").unwrapped, penalty=0.5, max_consecutive=1)
    >>> _ = env.reset(seed=0)
    >>> _, reward, _, truncated, info = env.step("no idea")
    >>> reward, truncated, info["truncated_reason"]
    (-0.5, True, 'format_errors')
    """

    def __init__(
        self,
        env: gym.Env,
        *,
        penalty: float = 0.1,
        message: str | None = None,
        max_consecutive: int | None = None,
    ):
        super().__init__(
            env, max_turns=None, penalty=penalty, message=message, max_consecutive=max_consecutive
        )

    def constructor_kwargs(self) -> dict[str, Any]:
        """This layer's settings, as `env.spec` records them."""
        return {"penalty": self.penalty, "message": self.message, "max_consecutive": self.max_consecutive}
