"""MaxTurns: `EpisodeLimits` with only a turn limit."""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from envs.wrappers.episode_limits import EpisodeLimits


class MaxTurns(EpisodeLimits):
    """Truncate after `max_turns` assistant turns (`info["truncated_reason"] = "max_turns"`); nothing else.

    Args:
        env: the env to wrap.
        max_turns: assistant turns before the episode is truncated (>= 1).

    >>> import envs
    >>> env = MaxTurns(envs.make("guess-number-v0").unwrapped, 1)
    >>> _ = env.reset(seed=0)
    >>> _, reward, _, truncated, info = env.step("no idea")
    >>> reward, truncated, info["truncated_reason"]
    (0.0, True, 'max_turns')
    """

    def __init__(self, env: gym.Env, max_turns: int):
        super().__init__(env, max_turns=max_turns, penalty=None)

    def constructor_kwargs(self) -> dict[str, Any]:
        """This layer's setting, as `env.spec` records it."""
        return {"max_turns": self.max_turns}
