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
        penalty: the charge (>= 0).
        message: the feedback, e.g. `"Unreadable ({error}); reply with one number."`.
        max_consecutive: how many in a row end the episode (None: never).

    >>> import envs
    >>> game = envs.make("guess-number-v0").unwrapped
    >>> env = ActionFormat(game, penalty=0.5, message="Bad: {error}", max_consecutive=1)
    >>> env.reset(seed=0)[1]["max_guesses"]
    9
    >>> messages, reward, _, truncated, info = env.step("no idea")
    >>> messages[0]["content"], reward, (truncated, info["truncated_reason"])
    ('Bad: no number found in the reply', -0.5, (True, 'format_errors'))
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
