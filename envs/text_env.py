"""TextEnv: a Gymnasium env whose observations are chat messages and whose actions are assistant turns."""

from __future__ import annotations

import os
import random
import threading
from collections.abc import Coroutine, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import gymnasium as gym

from envs.assistant_turn import AssistantTurn, read_action
from envs.errors import InvalidAction, InvalidOptions, ResetNeeded
from envs.messages import Message, tool_result, user
from envs.seeding import np_random
from envs.spaces import AssistantAction, ChatMessages
from envs.splitmix import SplitMix64
from envs.step_result import StepResult
from tools.run_sync import run_sync

if TYPE_CHECKING:
    import numpy as np

    from tools import Tool, ToolResult
    from tools.calls import ToolCall
    from tools.registry import ToolRegistry

T = TypeVar("T")

#: Defaults of the per-turn tool limits (see `TextEnv.set_turn_limits`).
DEFAULT_MAX_TOOL_CALLS_PER_TURN = 8
DEFAULT_MAX_TOOL_TIME_S = 30.0
DEFAULT_MAX_ACTION_CHARS = 32768


class TextEnv(gym.Env):
    """A multi-turn text environment.

    `reset(seed, options) -> (messages, info)` returns the opening conversation; `step(action) ->
    (messages, reward, terminated, truncated, info)` returns the messages to append. `action` is the
    assistant's text or a parsed assistant message (content + OpenAI-style `tool_calls`). Tool calls go
    to the env's tools (its own plus any given by list or YAML path); results come back as `tool`
    messages. An action the env cannot read never raises: the reply says what was wrong and
    `info["format_error"]` is set. Subclasses implement `_reset` and `_respond` (and may add tools
    through `own_tools`) and declare the `reset(options=...)` keys they read in `reset_options`.

    Per turn at most `max_tool_calls_per_turn` calls run, within `max_tool_time_s` seconds of tool time in
    all; calls over either limit get a "Not run: ..." tool message. After the episode ends, `step` takes
    no action and pays nothing until `reset`; `step` before the first `reset` raises `ResetNeeded`.
    """

    metadata = {"render_modes": ["ansi", "human"], "render_fps": 4}
    #: How tool calls written in the reply text are recognised (see `tools.calls`). The rollout sets it
    #: per episode to the format its chat template writes (`set_tool_call_format`).
    tool_call_format: str | None = "hermes"
    #: What the agent is told about the expected reply when its reply cannot be used.
    action_help: str = ""
    #: The `reset(options=...)` keys this env reads, each with what it accepts: a type (`int`, `str`, or a
    #: tuple of types), or a tuple of allowed values (`("easy", "medium", "hard")`). Other keys and values
    #: raise InvalidOptions naming the valid ones. None (the default for custom envs) checks nothing.
    reset_options: ClassVar[dict[str, Any] | None] = None

    # Episode state before the first reset. Class defaults, so building an env (once per episode in
    # verl's agent loop) sets only what differs; every write makes the instance's own.
    turn = 0
    episode_over = False
    total_reward = 0.0
    _has_reset = False
    _ended_as = (False, False)  # (terminated, truncated) of the step that ended the episode
    _extra_tools: Sequence[Tool] = ()  # the tools given by `tools=`, resolved
    _tool_prototypes: ToolRegistry | None = None
    _episode_tools: ToolRegistry | None = None  # this episode's fork, made at its first tool call
    _quick_random: SplitMix64 | None = None
    # Built on first use (`observation_space`, `action_space`): most envs made per episode never read them.
    _observation_space: ChatMessages | None = None
    _action_space: AssistantAction | None = None

    def __init__(
        self,
        *,
        tools: Sequence[Tool | str | Path] | Tool | str | Path | None = None,
        render_mode: str | None = None,
        max_action_chars: int = DEFAULT_MAX_ACTION_CHARS,
        max_tool_calls_per_turn: int | None = DEFAULT_MAX_TOOL_CALLS_PER_TURN,
        max_tool_time_s: float | None = DEFAULT_MAX_TOOL_TIME_S,
    ):
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"render_mode must be one of {self.metadata['render_modes']}, got {render_mode!r}"
            )
        self.render_mode = render_mode
        if (
            max_action_chars is DEFAULT_MAX_ACTION_CHARS
            and max_tool_calls_per_turn is DEFAULT_MAX_TOOL_CALLS_PER_TURN
            and max_tool_time_s is DEFAULT_MAX_TOOL_TIME_S
        ):
            # The defaults themselves (not equal values: 8.0 must still be refused) need no checking,
            # and a fresh env per episode (verl's agent loop) makes this path hot.
            self.max_action_chars = max_action_chars
            self.max_tool_calls_per_turn, self.max_tool_time_s = max_tool_calls_per_turn, max_tool_time_s
        else:
            self.set_turn_limits(
                max_action_chars=max_action_chars,
                max_tool_calls_per_turn=max_tool_calls_per_turn,
                max_tool_time_s=max_tool_time_s,
            )
        if tools is not None:  # without any, the class default (none) stands: one list less per `make`
            # Resolved now so a bad `tools=` fails at `make`, not at the first tool call.
            self._extra_tools = resolve_extra_tools(tools)
        self.transcript: list[Message] = []

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # A class that overrides `_respond` must see every text reply: a base class's text shortcut
        # (`_respond_text`, e.g. TextGame's) would go around it, so the plain default is put back.
        if "_respond" in cls.__dict__ and "_respond_text" not in cls.__dict__:
            cls._respond_text = TextEnv._respond_text

    def set_turn_limits(
        self,
        *,
        max_action_chars: int | None = None,
        max_tool_calls_per_turn: int | None | Any = ...,
        max_tool_time_s: float | None | Any = ...,
    ) -> None:
        """Change the reply size limit and the per-turn tool limits (None: no limit; omitted: unchanged)."""
        if max_action_chars is not None:
            if not _is_int(max_action_chars) or max_action_chars < 1:
                raise ValueError(f"max_action_chars must be a whole number >= 1, got {max_action_chars!r}")
            self.max_action_chars = int(max_action_chars)
            self._action_space = None  # a new one, with the new limit, on next use
        if max_tool_calls_per_turn is not ...:
            if max_tool_calls_per_turn is not None and (
                not _is_int(max_tool_calls_per_turn) or max_tool_calls_per_turn < 1
            ):
                raise ValueError(
                    f"max_tool_calls_per_turn must be a whole number >= 1 or None, got {max_tool_calls_per_turn!r}"
                )
            self.max_tool_calls_per_turn = max_tool_calls_per_turn
        if max_tool_time_s is not ...:
            if max_tool_time_s is not None and (
                not isinstance(max_tool_time_s, int | float)
                or isinstance(max_tool_time_s, bool)
                or not max_tool_time_s > 0
            ):
                raise ValueError(
                    f"max_tool_time_s must be a number of seconds > 0 or None, got {max_tool_time_s!r}"
                )
            self.max_tool_time_s = None if max_tool_time_s is None else float(max_tool_time_s)

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

    # ----- what subclasses implement -------------------------------------------------------------
    def _reset(self, options: dict[str, Any]) -> tuple[list[Message], dict[str, Any]]:
        """Start an episode with `self.np_random`; return the opening messages and info."""
        raise NotImplementedError

    async def _areset(self, options: dict[str, Any]) -> tuple[list[Message], dict[str, Any]]:
        """Async twin of `_reset`; override when opening the episode does I/O (e.g. an opponent moves first)."""
        return self._reset(options)

    def _respond(self, turn: AssistantTurn) -> StepResult:
        """React to an assistant turn that holds no tool call."""
        raise NotImplementedError

    def _respond_text(self, text: str) -> StepResult:
        """React to a plain-text reply (no tool call, nothing to clean); a shortcut envs may override."""
        return self._respond(AssistantTurn(text))

    async def _arespond(self, turn: AssistantTurn) -> StepResult:
        """Async twin of `_respond`; override when the reaction does I/O."""
        return self._respond(turn)

    def own_tools(self) -> list[Tool]:
        """Tools this env provides itself (e.g. a game's `guess` tool)."""
        return []

    def _after_tool_call(self, call: ToolCall, result: ToolResult, turn_info: dict) -> StepResult | None:
        """Hook after each tool call; return a StepResult to end or redirect the turn (e.g. `submit`)."""
        return None

    def expert_action(self) -> str:
        """The scripted expert's next reply (text), for baselines, tests and demonstrations."""
        raise NotImplementedError(f"{type(self).__name__} has no scripted expert")

    def random_action(self, rng: random.Random) -> str:
        """A uniformly random legal-looking move (text), drawn from `rng`: the noise of a noisy demonstrator."""
        raise NotImplementedError(
            f"{type(self).__name__} has no random_action; set turngym.warm_start.expert_noise=0 for it"
        )

    # ----- tools ---------------------------------------------------------------------------------
    @property
    def tool_registry(self) -> ToolRegistry:
        """The env's tools as a `tools.ToolRegistry`: its own, then the extra ones it was given.

        Built on first use: a plain-text reply never needs them, and building a game's action tool on
        every `make` cost most of a short episode.
        """
        if self._tool_prototypes is None:
            from tools.registry import ToolRegistry

            try:
                self._tool_prototypes = ToolRegistry([*self.own_tools(), *self._extra_tools])
            except ValueError as exc:  # two tools with one name
                raise ValueError(f"{type(self).__name__}: {exc}") from None
        return self._tool_prototypes

    @property
    def tools(self) -> list[Tool]:
        """All tools the agent may call in this env, in order (see `tool_registry`)."""
        return list(self.tool_registry)

    @property
    def tool_schemas(self) -> list[dict]:
        """OpenAI function schemas of `tools`, as rendered into the prompt by a chat template."""
        return self.tool_registry.schemas()

    # ----- seeding -------------------------------------------------------------------------------
    # `reset(seed=...)` records the seed; the numpy generator is built from it on first use. Most
    # episodes of most envs never use it, and building one costs more than a short episode.
    _generator: np.random.Generator | None = None
    _pending_seed: int | None = None

    @property
    def _np_random(self) -> np.random.Generator | None:
        # gym.Env's own attribute, read by its `np_random` and its env checker: a recorded seed becomes
        # the generator Gymnasium would have built at reset.
        if self._generator is None and self._pending_seed is not None:
            self._generator = np_random(self._pending_seed)[0]
            self._pending_seed = None
        return self._generator

    @_np_random.setter
    def _np_random(self, value: np.random.Generator | None) -> None:
        self._generator, self._pending_seed = value, None

    @property
    def quick_random(self) -> SplitMix64:
        """A cheap generator (`envs.splitmix.SplitMix64`) for envs that draw a few numbers per episode.

        Seeded from `reset(seed=...)` like `np_random`, with its own stream; an env never seeded takes
        the seed of `np_random` (fresh entropy, as Gymnasium's). Unseeded resets continue the stream.
        """
        if self._quick_random is None:
            seed = self.np_random_seed
            if seed < 0:  # np_random was set by hand: the seed comes from it
                seed = int(self.np_random.integers(0, 2**63))
            self._quick_random = SplitMix64(seed)
        return self._quick_random

    # ----- the Gymnasium API ---------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Start a new episode; the same seed and options give the same episode."""
        if self._episode_tools is not None:
            self._release_episode_tools()
        checked = self._begin_episode(seed, options)
        messages, info = self._reset(checked)
        self.transcript = list(messages)
        return messages, info

    def _begin_episode(self, seed: int | None, options: dict[str, Any] | None) -> dict[str, Any]:
        # What `reset` and `areset` share before the subclass opens the episode: checked options, the seed.
        checked = {} if options is None else self.check_reset_options(options)
        if seed is not None:
            if type(seed) is int and seed >= 0:
                self._generator, self._pending_seed, self._np_random_seed = None, seed, seed
            else:
                # Anything else takes Gymnasium's own path, its errors included (see envs.seeding).
                self._np_random, self._np_random_seed = np_random(seed)
            self._quick_random = None
        self.turn = 0
        self.total_reward = 0.0
        self.episode_over = False
        self._ended_as = (False, False)
        self._has_reset = True
        return checked

    async def areset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Async `reset`: the last episode's tools are released and `_areset` awaited on the caller's loop."""
        if self._episode_tools is not None:
            episode, self._episode_tools = self._episode_tools, None
            await episode.aclose()
        checked = self._begin_episode(seed, options)
        messages, info = await self._areset(checked)
        self.transcript = list(messages)
        return messages, info

    def check_reset_options(self, options: Any) -> dict[str, Any]:
        """`options` as a new dict, checked against `reset_options`; raises InvalidOptions naming valid ones."""
        name = type(self).__name__
        if options is None:
            return {}
        if not isinstance(options, Mapping):
            raise InvalidOptions(
                f"{name}: reset options must be a dict (or None), got {type(options).__name__}; "
                f"valid options: {describe_options(self.reset_options)}"
            )
        options = dict(options)
        declared = self.reset_options
        if declared is None:
            return options
        unknown = [k for k in options if k not in declared]
        if unknown:
            shown = ", ".join(_short_repr(k) for k in unknown[:5])
            raise InvalidOptions(
                f"{name}: unknown reset option{'s' if len(unknown) > 1 else ''} {shown}; "
                f"valid options: {describe_options(declared)}"
            )
        for key, value in options.items():
            problem = _option_value_problem(declared[key], value)
            if problem is not None:
                raise InvalidOptions(f"{name}: reset option {key!r} {problem}")
        return options

    def step(self, action: Any):
        """Play one assistant turn; returns (messages, reward, terminated, truncated, info)."""
        if not self._has_reset:
            self._require_reset()
        if self.episode_over:
            return self._refuse_after_end()
        if (
            type(action) is str
            and len(action) <= self.max_action_chars
            and action.isprintable()
            and "<tool_call>" not in action
            and self.tool_call_format == "hermes"
        ):
            # read_action's plain-reply path and `_finish`, inlined: most replies of most envs take
            # this path, and it is every step of a fast game.
            messages, reward, terminated, truncated, info = self._respond_text(action)
            self.turn = turn_number = self.turn + 1
            transcript = self.transcript
            transcript.append({"role": "assistant", "content": action})
            transcript += messages
            if type(reward) is not float:  # float() of a float is a call for nothing
                reward = float(reward)
            self.total_reward += reward
            if terminated or truncated:
                self.episode_over = True
                self._ended_as = (bool(terminated), bool(truncated))
            if not info:
                # The usual turn says nothing more: its info is built whole, not key by key.
                return messages, reward, terminated, truncated, {"format_error": None, "turn": turn_number}
            if "format_error" not in info:
                info["format_error"] = None
            info["turn"] = turn_number
            return messages, reward, terminated, truncated, info
        try:  # `_read`, inlined: this is the hot path of every env
            turn = read_action(
                action,
                max_chars=self.max_action_chars,
                tool_call_format=self.tool_call_format,
                has_tools=self._has_tools,
            )
        except InvalidAction as e:
            return self._finish(_placeholder(action), self._format_error(str(e)))
        if turn.tool_calls or turn.call_errors:
            result = run_detached(self._run_tool_calls(turn))
        else:
            result = self._respond(turn)
        return self._finish(turn.as_message(), result)

    async def astep(self, action: Any):
        """Async `step`: tool calls and I/O-bound envs run without blocking the event loop."""
        self._require_reset()
        if self.episode_over:
            return self._refuse_after_end()
        turn, problem = self._read(action)
        if problem is not None:
            return self._finish(_placeholder(action), self._format_error(problem))
        if turn.tool_calls or turn.call_errors:
            result = await self._run_tool_calls(turn)
        else:
            result = await self._arespond(turn)
        return self._finish(turn.as_message(), result)

    def set_tool_call_format(self, tool_call_format: str | None) -> None:
        """Read tool calls written in reply text in this format (None: text is never read as calls)."""
        if tool_call_format is not None:
            from tools.calls import get_format

            try:
                get_format(tool_call_format)
            except KeyError as e:
                raise ValueError(f"tool_call_format: {e.args[0]}") from None
        self.tool_call_format = tool_call_format

    #: Whether the other player is the policy itself (`opponent="self"`); envs with opponents override it.
    wants_policy_opponent: bool = False

    def attach_policy_opponent(self, opponent: Any) -> None:
        """Play the other seat with `opponent` from the next reset; only envs made with `opponent="self"`."""
        raise ValueError(f"{type(self).__name__} has no opponent seat to give the policy")

    def mark_episode_over(self, *, terminated: bool, truncated: bool) -> None:
        """Record that the episode ended outside the env (e.g. a wrapper truncated it): `step` refuses now."""
        if not self.episode_over:
            self.episode_over = True
            self._ended_as = (bool(terminated), bool(truncated))

    def render(self) -> str | None:
        """The conversation so far as text (`ansi`), or printed (`human`)."""
        text = render_transcript(self.transcript)
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def close(self) -> None:
        """Release per-episode tool state."""
        self._release_episode_tools()
        super().close()

    # ----- internals -----------------------------------------------------------------------------
    def _read(self, action: Any) -> tuple[AssistantTurn | None, str | None]:
        try:
            return read_action(
                action,
                max_chars=self.max_action_chars,
                tool_call_format=self.tool_call_format,
                has_tools=self._has_tools,
            ), None
        except InvalidAction as e:
            return None, str(e)

    def _has_tools(self) -> bool:
        return len(self.tool_registry) > 0

    def _format_error(self, problem: str) -> StepResult:
        help_text = f" {self.action_help}" if self.action_help else ""
        return StepResult(
            [user(f"Your reply could not be used: {problem}.{help_text}")], info={"format_error": problem}
        )

    def _require_reset(self) -> None:
        if not self._has_reset:
            raise ResetNeeded(f"{type(self).__name__}: call reset() before step(); no episode has started")

    def _refuse_after_end(self):
        # Nothing is parsed, run or recorded, and the reward is exactly 0: an ended episode pays nothing.
        terminated, truncated = self._ended_as
        return refusal_after_end(terminated, truncated, self.turn)

    def _finish(self, assistant: Message, result: StepResult):
        # `assistant`: the turn as recorded (the reply's message, or a placeholder for an unreadable one).
        # `result`: a StepResult or the plain 5-tuple it stands for. `step` inlines this for plain
        # replies: a change here belongs there too.
        messages, reward, terminated, truncated, info = result
        self.turn = turn_number = self.turn + 1
        transcript = self.transcript
        transcript.append(assistant)
        transcript += messages
        reward = float(reward)
        self.total_reward += reward
        if terminated or truncated:
            self.episode_over = True
            self._ended_as = (bool(terminated), bool(truncated))
        if "format_error" not in info:
            info["format_error"] = None
        info["turn"] = turn_number
        return messages, reward, terminated, truncated, info

    async def _run_tool_calls(self, turn: AssistantTurn) -> StepResult:
        import asyncio

        from tools import ToolResult

        loop = asyncio.get_running_loop()
        started = loop.time()
        budget, cap = self.max_tool_time_s, self.max_tool_calls_per_turn
        deadline = None if budget is None else started + budget
        calls = turn.tool_calls
        messages: list[Message] = []
        reward = 0.0
        turn_info: dict[str, Any] = {
            "tool_calls": len(calls),
            "tool_errors": len(turn.call_errors),
            "tool_calls_not_run": 0,
            "tool_call_cut": None,
        }
        ended: StepResult | None = None
        cut: tuple[int, str, float] | None = (
            None  # (index, name, seconds it ran) of the call the budget stopped
        )
        notes: list[str] = []
        used_up_at: int | None = None  # first call not run because earlier calls used the whole budget
        for i, call in enumerate(calls):
            not_run = self._why_not_run(i, len(calls), ended, cut, deadline, loop.time())
            if not_run is not None:
                turn_info["tool_calls_not_run"] += 1
                if "used up" in not_run and used_up_at is None:
                    used_up_at = i
                messages.append(tool_result(call.id, call.name, f"Not run: {not_run}"))
                continue
            tool = self._episode_tool(call.name)
            if tool is None:
                available = ", ".join(self.tool_registry.names) or "none"
                turn_info["tool_errors"] += 1
                messages.append(
                    tool_result(
                        call.id,
                        call.name,
                        f"Error: unknown tool `{call.name}`. Available tools: {available}.",
                    )
                )
                continue
            call_started = loop.time()
            remaining = None if deadline is None else max(0.0, deadline - call_started)
            try:
                # The budget cancels the call itself: its output is lost and nothing after it runs.
                result = await asyncio.wait_for(
                    tool.call(call.arguments, context={"env": self, "info": turn_info}), remaining
                )
            except TimeoutError:
                ran = loop.time() - call_started
                cut = (i, call.name, ran)
                turn_info["tool_call_cut"] = call.name
                result = ToolResult.error(
                    f"Cut: stopped after {ran:.1f} s, when this turn's tool time budget of {budget:g} s "
                    "ran out; its output is lost."
                )
                turn_info["tool_errors"] += 1
                messages.append(tool_result(call.id, call.name, result.content))
                continue
            turn_info["tool_errors"] += int(result.is_error)
            reward += result.reward or 0.0
            messages.append(tool_result(call.id, call.name, result.content))
            redirect = self._after_tool_call(call, result, turn_info)
            if redirect is not None:
                more, more_reward, terminated, truncated, more_info = redirect
                messages.extend(more)
                reward += more_reward
                turn_info.update(more_info)
                if terminated or truncated:
                    ended = StepResult(*redirect)
            elif result.terminate:
                ended = StepResult([], terminated=True)
        # Notes follow the tool messages: templates that pair calls with results need those right after the calls.
        if turn.call_errors:
            notes.append("Some tool calls could not be read: " + "; ".join(turn.call_errors))
        if cap is not None and len(calls) > cap:
            notes.append(
                f"This reply made {len(calls)} tool calls; at most {cap} run per turn, so "
                f"{_calls_phrase(cap + 1, len(calls))} not run."
            )
        if cut is not None:
            index, name, ran = cut
            later = _calls_phrase(index + 2, min(len(calls), cap or len(calls)))
            notes.append(
                f"This turn's tool time budget of {budget:g} s ran out during call {index + 1} (`{name}`), "
                f"which was stopped after {ran:.1f} s" + (f"; {later} not run." if later else ".")
            )
        if used_up_at is not None:
            notes.append(
                f"This turn's tool time budget of {budget:g} s was used up by the calls before call "
                f"{used_up_at + 1}; {_calls_phrase(used_up_at + 1, min(len(calls), cap or len(calls)))} not run."
            )
        messages.extend(user(n) for n in notes)
        return StepResult(
            messages,
            reward,
            terminated=bool(ended and ended.terminated),
            truncated=bool(ended and ended.truncated),
            info=turn_info,
        )

    def _why_not_run(
        self,
        index: int,
        total: int,
        ended: StepResult | None,
        cut: tuple[int, str, float] | None,
        deadline: float | None,
        now: float,
    ) -> str | None:
        if ended is not None:
            return "the episode ended at an earlier call."
        cap = self.max_tool_calls_per_turn
        if cap is not None and index >= cap:
            return f"only the first {cap} tool calls of a turn are run; this was call {index + 1} of {total}."
        if cut is not None:
            return f"this turn's tool time budget of {self.max_tool_time_s:g} s ran out at call {cut[0] + 1}."
        if deadline is not None and now >= deadline:
            return f"this turn's tool time budget of {self.max_tool_time_s:g} s was used up by earlier calls."
        return None

    def _episode_tool(self, name: str) -> Tool | None:
        if self._episode_tools is None:
            # Stateful tools get fresh instances per episode (at its first call), released at reset.
            self._episode_tools = self.tool_registry.fork()
        return self._episode_tools.get(name)

    def _release_episode_tools(self) -> None:
        if self._episode_tools is None:
            return
        episode, self._episode_tools = self._episode_tools, None
        # Releasing one tool does not stop the others or the next episode (ToolRegistry.aclose).
        run_sync(episode.aclose())


def refusal_after_end(terminated: bool, truncated: bool, turn: int | None = None):
    """The step result for an action after the episode ended: a message, reward 0, the same end flags."""
    how = "terminated" if terminated or not truncated else "was truncated"
    text = (
        f"The episode has ended (it {how}); this action was not taken and earns no reward. "
        "Call reset() to start a new episode."
    )
    info: dict[str, Any] = {"format_error": "action after the episode ended", "episode_ended": True}
    if turn is not None:
        info["turn"] = turn
    return [user(text)], 0.0, bool(terminated or not truncated), bool(truncated), info


def resolve_extra_tools(tools: Any) -> list[Tool]:
    """Tools from `tools=`: built-in names, YAML paths and Tool objects (alone or in a list); else a clear error."""
    if tools is None:
        return []
    if isinstance(tools, str | os.PathLike) or not isinstance(tools, Sequence):
        tools = [tools]
    resolved: list[Tool] = []
    for item in tools:
        resolved.extend(_resolve_tool_item(item))
    return resolved


def _resolve_tool_item(item: Any) -> list[Tool]:
    from tools import Tool, load_tools
    from tools.builtin import BUILTINS, get_builtin, list_builtins

    if isinstance(item, Tool):
        return [item]
    builtins = ", ".join(list_builtins())
    if isinstance(item, os.PathLike) or (isinstance(item, str) and item.endswith((".yaml", ".yml"))):
        return load_tools(item)
    if isinstance(item, str):
        if item in BUILTINS:
            return [get_builtin(item)]
        raise ValueError(
            f"tools=: {item!r} is neither a built-in tool ({builtins}) nor a YAML file path (.yaml/.yml)"
        )
    raise TypeError(
        f"tools= takes built-in tool names ({builtins}), YAML file paths or Tool objects (decorate a "
        f"function with @tools.tool), alone or in a list; got {type(item).__name__}"
    )


def describe_options(declared: dict[str, Any] | None) -> str:
    """Human-readable list of declared reset options, e.g. "difficulty (one of 'easy', 'hard'), index (int)"."""
    if declared is None:
        return "any (this env declares none)"
    if not declared:
        return "none (this env takes no reset options)"
    return ", ".join(f"{key} ({_describe_spec(spec)})" for key, spec in declared.items())


def _describe_spec(spec: Any) -> str:
    if spec is None or spec is object:
        return "any value"
    if isinstance(spec, type):
        return spec.__name__
    if _is_type_tuple(spec):
        return " or ".join(t.__name__ for t in spec)
    return "one of " + ", ".join(repr(v) for v in spec)


def _is_type_tuple(spec: Any) -> bool:
    return isinstance(spec, tuple) and bool(spec) and all(isinstance(t, type) for t in spec)


def _matches_type(value: Any, kind: type) -> bool:
    # bool is an int to Python but never a sensible count, index or seed.
    if kind is int:
        return _is_int(value)
    if kind is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    return isinstance(value, kind)


def _option_value_problem(spec: Any, value: Any) -> str | None:
    if spec is None or spec is object:
        return None
    if isinstance(spec, type) or _is_type_tuple(spec):
        kinds = (spec,) if isinstance(spec, type) else spec
        if any(_matches_type(value, k) for k in kinds):
            return None
        return f"must be {_describe_spec(spec)}, got {type(value).__name__} {_short_repr(value)}"
    try:
        allowed = any(type(value) is type(v) and value == v for v in spec)
    except Exception:  # a value whose == misbehaves is simply not one of the choices
        allowed = False
    return None if allowed else f"must be {_describe_spec(spec)}, got {_short_repr(value)}"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _short_repr(value: Any, limit: int = 80) -> str:
    try:
        text = repr(value)
    except Exception:  # RecursionError on absurd nesting, or a broken __repr__
        return f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _calls_phrase(first: int, last: int) -> str:
    # "call 3 was" / "calls 3-1000 were": the subject of "... not run".
    if first > last:
        return ""
    return f"call {first} was" if first == last else f"calls {first}-{last} were"


def run_detached(coro: Coroutine[Any, Any, T]) -> T:
    """Like `run_sync`, but a tool call the time budget cut (a sync tool's thread) is not waited for.

    `asyncio.run` joins the default executor's threads on exit, so one cut call would still hold the step.
    """
    import asyncio

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _run_in_new_loop(coro)
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = _run_in_new_loop(coro)
        except BaseException as e:  # re-raised in the caller's thread
            box["error"] = e

    worker = threading.Thread(target=target, name="turngym-step")
    worker.start()
    worker.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


def _run_in_new_loop(coro: Coroutine[Any, Any, T]) -> T:
    import asyncio

    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(coro)
    finally:
        try:
            pending = asyncio.all_tasks(loop)
            for task in pending:
                task.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()  # shuts the default executor down without joining its threads


def _placeholder(action: Any) -> Message:
    if isinstance(action, str):
        shown = action if len(action) <= 200 else f"{action[:200]}… [{len(action)} characters]"
    else:
        shown = f"[unreadable action of type {type(action).__name__}]"
    return {"role": "assistant", "content": shown}


def render_transcript(messages: list[Message]) -> str:
    """A conversation as plain text, one block per message."""
    blocks = []
    for m in messages:
        head = m["role"] if m["role"] != "tool" else f"tool {m.get('name', '')}"
        body = m.get("content") or ""
        for call in m.get("tool_calls") or ():
            fn = call.get("function", {})
            body += f"\n→ {fn.get('name')}({_arguments_text(fn.get('arguments'))})"
        blocks.append(f"[{head}]\n{body}")
    return "\n\n".join(blocks)


def _arguments_text(arguments: Any) -> str:
    if arguments is None or isinstance(arguments, str):
        return arguments or ""
    from tools.calls.jsonscan import dump  # never raises, even on hand-built deep or odd values

    return dump(arguments)
