"""RewardShaping: rescale rewards and charge a cost per turn."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym

from envs.wrappers.text_wrapper import TextWrapper


class RewardShaping(TextWrapper):
    """reward' = scale * reward - turn_cost (+ fn(reward, info) when given); the raw reward stays in info.

    Args:
        env: the env to wrap (usually what `envs.make` returns, so the format penalty is shaped too).
        scale: multiplies the reward.
        turn_cost: subtracted on every turn.
        fn: `fn(shaped_reward, info) -> reward`, applied last.

    >>> import envs
    >>> env = RewardShaping(envs.make("guess-number-v0"), scale=2.0, turn_cost=0.5)
    >>> _ = env.reset(seed=0)
    >>> _, reward, _, _, info = env.step("no idea")
    >>> reward, info["raw_reward"]
    (-0.7, -0.1)
    """

    def __init__(
        self,
        env: gym.Env,
        *,
        scale: float = 1.0,
        turn_cost: float = 0.0,
        fn: Callable[[float, dict], float] | None = None,
    ):
        super().__init__(env)
        self.scale = scale
        self.turn_cost = turn_cost
        self.fn = fn

    def constructor_kwargs(self) -> dict[str, Any]:
        """This layer's settings, as `env.spec` records them."""
        return {"scale": self.scale, "turn_cost": self.turn_cost, "fn": self.fn}

    def on_step(
        self, messages: list, reward: float, terminated: bool, truncated: bool, info: dict
    ) -> tuple[list, float, bool, bool, dict]:
        """Shape the reward, keeping the env's own in `info["raw_reward"]`."""
        info.setdefault("raw_reward", reward)
        shaped = self.scale * reward - self.turn_cost
        if self.fn is not None:
            shaped = float(self.fn(shaped, info))
        return messages, shaped, terminated, truncated, info
