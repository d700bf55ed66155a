"""RewardShaping: rescale rewards and charge a cost per turn."""

from __future__ import annotations

from collections.abc import Callable

from envs.wrappers.text_wrapper import TextWrapper


class RewardShaping(TextWrapper):
    """reward' = scale * reward - turn_cost (+ fn(reward, info) when given); the raw reward stays in info."""

    def __init__(
        self,
        env,
        *,
        scale: float = 1.0,
        turn_cost: float = 0.0,
        fn: Callable[[float, dict], float] | None = None,
    ):
        super().__init__(env)
        self.scale = scale
        self.turn_cost = turn_cost
        self.fn = fn

    def on_step(self, messages, reward, terminated, truncated, info):
        """Shape the reward, keeping the env's own in `info["raw_reward"]`."""
        info.setdefault("raw_reward", reward)
        shaped = self.scale * reward - self.turn_cost
        if self.fn is not None:
            shaped = float(self.fn(shaped, info))
        return messages, shaped, terminated, truncated, info
