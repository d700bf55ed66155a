"""Base class for wrappers of TextEnv: one hook each for reset and step, shared by `step` and `astep`."""

from __future__ import annotations

import dataclasses
from typing import Any

import gymnasium as gym

from envs.core.episode_end import refusal_after_end
from envs.core.protocol import ForwardsEnvProtocol


class TextWrapper(ForwardsEnvProtocol, gym.Wrapper):
    """A Gymnasium wrapper that also forwards the env contract (`envs.core.protocol.EnvProtocol`): `areset`,
    `astep`, `tool_schemas`, the tool-call format, the turn limits and the opponent hook, plus `tools`
    and `expert_action`.

    A wrapper changes what it sees in two hooks, `on_reset(messages, info)` and `on_step(messages, reward,
    terminated, truncated, info)`; `reset`/`areset` and `step`/`astep` call them every time (subclasses
    write the hooks, not `step`). Once a step it returns ends the episode (its own verdict, e.g. a turn
    limit, included), later steps are refused with reward 0 until `reset`. The end is recorded once, by
    the base env (`mark_episode_over`), which then refuses; a refusal (a step with an end flag and
    `info["episode_ended"]`) passes through every layer untouched, so no wrapper charges or pays anything
    after the end. Over an env that cannot record it (no `mark_episode_over`), the wrapper refuses itself. `constructor_kwargs` makes a wrapper rebuildable from `env.spec`.

    Args:
        env: the env to wrap.

    >>> import envs
    >>> class Shouting(TextWrapper):
    ...     def on_step(self, messages, reward, terminated, truncated, info):
    ...         messages = [{**m, "content": m["content"].upper()} for m in messages]
    ...         return messages, reward, terminated, truncated, info
    >>> env = Shouting(envs.make("guess-number-v0"))
    >>> _ = env.reset(seed=0)
    >>> env.step("50")[0][0]["content"]
    '50 IS TOO LOW. GUESS A HIGHER NUMBER.'
    """

    #: (terminated, truncated) of the step that ended the episode, kept here only over an env that cannot
    #: record it (one without `mark_episode_over`, e.g. a plain `gymnasium.Env`); None while it runs.
    _ended: tuple[bool, bool] | None = None

    def __init__(self, env: gym.Env):
        super().__init__(env)
        #: Where the end of the episode is recorded: once, by the base env, for the whole stack.
        self._mark_end = getattr(env.unwrapped, "mark_episode_over", None)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Reset the wrapped env, then let the wrapper see the opening."""
        messages, info = self.env.reset(seed=seed, options=options)
        self._ended = None
        return self.on_reset(messages, info)

    def step(self, action: Any):
        """Step the wrapped env, then let the wrapper adjust the result (`on_step`)."""
        if self._ended is not None:
            return self._refusal()
        return self._after_step(self.env.step(action))

    async def areset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Async reset of the wrapped env, then the same `on_reset` hook as `reset`."""
        messages, info = await self.env.areset(seed=seed, options=options)
        self._ended = None
        return self.on_reset(messages, info)

    async def astep(self, action: Any):
        """Async step of the wrapped env, adjusted by the same hook as `step`."""
        if self._ended is not None:
            return self._refusal()
        return self._after_step(await self.env.astep(action))

    def on_reset(self, messages: list, info: dict):
        """Adjust the opening; state kept by a wrapper must be cleared here."""
        return messages, info

    def on_step(self, messages: list, reward: float, terminated: bool, truncated: bool, info: dict):
        """Adjust a step's result."""
        return messages, reward, terminated, truncated, info

    def constructor_kwargs(self) -> dict[str, Any] | None:
        """The keyword arguments that build this wrapper again over another env, recorded in `env.spec`.

        None (the default for a wrapper of your own): the layer is listed in `env.spec.additional_wrappers`
        but cannot be rebuilt from it; return your constructor's keywords to make it rebuildable.
        """
        return None

    @property
    def spec(self) -> Any:
        """Gymnasium's spec of the wrapped env with this layer appended to `additional_wrappers`.

        `envs.make(env.spec)` (or `gymnasium.make(env.spec)`) rebuilds the whole stack from it.
        """
        below = self.env.spec
        if below is None:
            return None
        from gymnasium.envs.registration import WrapperSpec

        layer = WrapperSpec(
            name=type(self).__name__,
            entry_point=f"{type(self).__module__}:{type(self).__name__}",
            kwargs=self.constructor_kwargs(),
        )
        return dataclasses.replace(below, additional_wrappers=(*below.additional_wrappers, layer))

    def _after_step(self, result: tuple):
        # After the end, the base env refuses (`info["episode_ended"]`, always with an end flag): the
        # refusal passes through every layer untouched, so no wrapper charges or pays anything for it.
        messages, reward, terminated, truncated, info = result
        if (terminated or truncated) and info.get("episode_ended"):
            return result
        result = self.on_step(messages, reward, terminated, truncated, info)
        if result[2] or result[3]:
            self._record_end(bool(result[2]), bool(result[3]))
        return result

    def _record_end(self, terminated: bool, truncated: bool) -> None:
        # The base env records the end for the whole stack (its next `step` refuses, whichever layer
        # is stepped); only an env that cannot record it leaves the refusing to this layer.
        if self._mark_end is not None:
            self._mark_end(terminated=terminated, truncated=truncated)
        else:
            self._ended = (terminated, truncated)

    def _refusal(self):
        terminated, truncated = self._ended or (True, False)
        return refusal_after_end(terminated, truncated, getattr(self.unwrapped, "turn", None))

    @property
    def tools(self) -> list:
        """The wrapped env's tools."""
        return self.env.tools

    def expert_action(self) -> str:
        """The wrapped env's scripted expert move."""
        return self.env.expert_action()
