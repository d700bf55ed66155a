"""Base class for wrappers of TextEnv: one hook each for reset and step, shared by `step` and `astep`."""

from __future__ import annotations

from typing import Any

import gymnasium as gym


class TextWrapper(gym.Wrapper):
    """A Gymnasium wrapper that also forwards `astep`, `tools`, `tool_schemas` and `expert_action`."""

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Reset the wrapped env, then let the wrapper see the opening."""
        messages, info = self.env.reset(seed=seed, options=options)
        return self.on_reset(messages, info)

    def step(self, action: Any):
        """Step the wrapped env, then let the wrapper adjust the result."""
        return self.on_step(*self.env.step(action))

    async def astep(self, action: Any):
        """Async step of the wrapped env, adjusted by the same hook as `step`."""
        return self.on_step(*await self.env.astep(action))

    def on_reset(self, messages: list, info: dict):
        """Adjust the opening; state kept by a wrapper must be cleared here."""
        return messages, info

    def on_step(self, messages: list, reward: float, terminated: bool, truncated: bool, info: dict):
        """Adjust a step's result."""
        return messages, reward, terminated, truncated, info

    @property
    def tools(self) -> list:
        """The wrapped env's tools."""
        return self.env.tools

    @property
    def tool_schemas(self) -> list[dict]:
        """The wrapped env's tool schemas."""
        return self.env.tool_schemas

    def expert_action(self) -> str:
        """The wrapped env's scripted expert move."""
        return self.env.expert_action()
