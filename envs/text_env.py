"""TextEnv: a Gymnasium env whose observations are chat messages and whose actions are assistant turns."""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from chat.calls.formats import get_format, may_hold_calls
from chat.message import Message, user
from common.run_sync import run_sync
from envs.assistant_turn import AssistantTurn, read_action
from envs.episode_end import refusal_after_end
from envs.episode_tools import EpisodeTools
from envs.errors import InvalidAction, ResetNeeded
from envs.extra_tools import resolve_extra_tools
from envs.lazy_seeding import LazySeeding
from envs.reset_options import check_options
from envs.reset_options import describe_options as describe_options  # public here before the split
from envs.step_result import StepResult
from envs.tool_turn import run_tool_turn
from envs.transcript import render_transcript, unreadable_reply
from envs.turn_limits import (
    DEFAULT_MAX_ACTION_CHARS,
    DEFAULT_MAX_TOOL_CALLS_PER_TURN,
    DEFAULT_MAX_TOOL_TIME_S,
    TurnLimits,
)

if TYPE_CHECKING:
    from chat.calls import ToolCall
    from tools import Tool, ToolResult


class TextEnv(TurnLimits, EpisodeTools, LazySeeding):
    """A multi-turn text environment: the env contract (`envs.protocol.EnvProtocol`) on chat messages.

    `reset` returns the opening conversation and `step` the messages to append. An action is the
    assistant's text or a parsed assistant message (content + OpenAI-style `tool_calls`). Tool calls go to
    the env's tools (its own plus any given by `tools=`) and come back as `tool` messages (see
    `envs.tool_turn`). An action the env cannot read never raises: the reply says what was wrong and
    `info["format_error"]` is set. After the episode ends, `step` takes no action and pays nothing until
    `reset`; `step` before the first `reset` raises `ResetNeeded`.

    Subclasses implement `_reset` and `_respond` (async twins `_areset`/`_arespond` when they do I/O), may
    add tools through `own_tools`, and declare the `reset(options=...)` keys they read in `reset_options`.

    Args:
        tools: Extra tools: built-in names, YAML paths or Tool objects (see `envs.extra_tools`).
        render_mode: "ansi" (`render` returns the transcript) or "human" (it prints it).
        max_action_chars: The longest reply read; a longer one is a format error.
        max_tool_calls_per_turn: Calls past this many in one turn are not run (None: no cap).
        max_tool_time_s: Seconds of tool time one turn may use in all (None: no budget).

    Example:
        >>> from chat.message import user
        >>> from envs.step_result import StepResult
        >>> class Greet(TextEnv):
        ...     def _reset(self, options):
        ...         return [user("Say hi.")], {}
        ...
        ...     def _respond(self, turn):
        ...         return StepResult([user("Bye.")], float("hi" in turn.content), terminated=True)
        >>> env = Greet()
        >>> env.reset(seed=0)
        ([{'role': 'user', 'content': 'Say hi.'}], {})
        >>> env.step("hi there")
        ([{'role': 'user', 'content': 'Bye.'}], 1.0, True, False, {'format_error': None, 'turn': 1})
        >>> env.step("again")[1:4]  # the episode is over: nothing is taken, nothing paid
        (0.0, True, False)
    """

    metadata = {"render_modes": ["ansi", "human"], "render_fps": 4}
    #: How tool calls written in the reply text are recognised (see `chat.calls`). The rollout sets it
    #: per episode to the format its chat template writes (`set_tool_call_format`).
    tool_call_format: str | None = "hermes"
    #: What the agent is told about the expected reply when its reply cannot be used.
    action_help: str = ""
    #: The `reset(options=...)` keys this env reads, each with what it accepts (see `envs.reset_options`).
    #: Other keys and values raise InvalidOptions naming the valid ones. None checks nothing.
    reset_options: ClassVar[dict[str, Any] | None] = None
    #: Whether the other player is the policy itself (`opponent="self"`); envs with opponents override it.
    wants_policy_opponent: bool = False

    # Episode state before the first reset. Class defaults, so building an env (once per episode in
    # verl's agent loop) sets only what differs; every write makes the instance's own.
    turn = 0
    episode_over = False
    total_reward = 0.0
    _has_reset = False
    _ended_as = (False, False)  # (terminated, truncated) of the step that ended the episode

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
        # The defaults themselves (not equal values: 8.0 must still be refused) are the class's, and a
        # fresh env per episode (verl's agent loop) makes this path hot.
        if (
            max_action_chars is not DEFAULT_MAX_ACTION_CHARS
            or max_tool_calls_per_turn is not DEFAULT_MAX_TOOL_CALLS_PER_TURN
            or max_tool_time_s is not DEFAULT_MAX_TOOL_TIME_S
        ):
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

    def _after_tool_call(self, call: ToolCall, result: ToolResult, turn_info: dict) -> StepResult | None:
        """Hook after each tool call, in call order; return a StepResult to end or redirect the turn."""
        return None

    def expert_action(self) -> str:
        """The scripted expert's next reply (text), for baselines, tests and demonstrations."""
        raise NotImplementedError(f"{type(self).__name__} has no scripted expert")

    def random_action(self, rng: random.Random) -> str:
        """A uniformly random legal-looking move (text), drawn from `rng`: the noise of a noisy demonstrator."""
        raise NotImplementedError(
            f"{type(self).__name__} has no random_action; set turngym.warm_start.expert_noise=0 for it"
        )

    # ----- the Gymnasium API ---------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Start a new episode; the same seed and options give the same episode.

        Args:
            seed: Seeds `np_random` and `quick_random` (None: their streams continue).
            options: Per-episode settings, checked against `reset_options`.

        Returns:
            `(messages, info)`: the opening conversation and what the env says about the episode.

        Example:
            >>> import envs
            >>> env = envs.make("guess-number-v0")
            >>> env.reset(seed=3) == env.reset(seed=3)
            True
        """
        if self._episode_tools is not None:
            self._release_episode_tools()
        checked = self._begin_episode(seed, options)
        messages, info = self._reset(checked)
        self.transcript = list(messages)
        return messages, info

    async def areset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """`reset` on the caller's event loop: the last episode's tools are released and `_areset` awaited.

        Args:
            seed: As for `reset`.
            options: As for `reset`.

        Returns:
            The same `(messages, info)` as `reset` with the same seed and options.

        Example:
            >>> import asyncio, envs
            >>> env = envs.make("guess-number-v0")
            >>> asyncio.run(env.areset(seed=3)) == env.reset(seed=3)
            True
        """
        await self._arelease_episode_tools()
        checked = self._begin_episode(seed, options)
        messages, info = await self._areset(checked)
        self.transcript = list(messages)
        return messages, info

    def _begin_episode(self, seed: int | None, options: dict[str, Any] | None) -> dict[str, Any]:
        # What `reset` and `areset` share before the subclass opens the episode.
        checked = {} if options is None else self.check_reset_options(options)
        if seed is not None:  # None continues the streams
            self._record_seed(seed)
        self.turn = 0
        self.total_reward = 0.0
        self.episode_over = False
        self._ended_as = (False, False)
        self._has_reset = True
        return checked

    def check_reset_options(self, options: Any) -> dict[str, Any]:
        """`options` as a new dict, checked against `reset_options`; raises InvalidOptions naming valid ones."""
        return check_options(type(self).__name__, self.reset_options, options)

    def step(self, action: Any):
        """Play one assistant turn.

        Args:
            action: The assistant's reply: text, or a parsed assistant message with `tool_calls`.

        Returns:
            `(messages, reward, terminated, truncated, info)`: the messages to append, this turn's reward,
            the end flags, and info with `turn` and `format_error` (None when the reply was readable).

        Example:
            >>> import envs
            >>> env = envs.make("guess-number-v0")
            >>> _ = env.reset(seed=0)
            >>> messages, reward, terminated, truncated, info = env.step("no number here")
            >>> info["format_error"] is not None, terminated
            (True, False)
        """
        if not self._has_reset:
            self._require_reset()
        if self.episode_over:
            return self._refuse_after_end()
        if (
            type(action) is str
            and len(action) <= self.max_action_chars
            and action.isprintable()
            and not (self.tool_call_format and may_hold_calls(action, self.tool_call_format))
        ):
            # A printable reply without a marker of the env's call format (the registry's) holds no call
            # and nothing to clean: read_action would return it as it is. Most replies of most envs take
            # this path, and it is every step of a game.
            return self._finish({"role": "assistant", "content": action}, self._respond_text(action))
        turn = self._read(action)
        if not isinstance(turn, AssistantTurn):  # unreadable: the finished step saying why
            return turn
        if turn.tool_calls or turn.call_errors:
            # A call the time budget cut keeps its thread until it ends: the step does not wait for it.
            result = run_sync(run_tool_turn(self, turn), wait_for_threads=False)
        else:
            result = self._respond(turn)
        return self._finish(turn.as_message(), result)

    async def astep(self, action: Any):
        """`step` on the caller's event loop: tool calls and I/O-bound envs run without blocking it."""
        self._require_reset()
        if self.episode_over:
            return self._refuse_after_end()
        turn = self._read(action)
        if not isinstance(turn, AssistantTurn):
            return turn
        if turn.tool_calls or turn.call_errors:
            result = await run_tool_turn(self, turn)
        else:
            result = await self._arespond(turn)
        return self._finish(turn.as_message(), result)

    def set_tool_call_format(self, tool_call_format: str | None) -> None:
        """Read tool calls written in reply text in this format (None: text is never read as calls)."""
        if tool_call_format is not None:
            try:
                get_format(tool_call_format)
            except KeyError as e:
                raise ValueError(f"tool_call_format: {e.args[0]}") from None
        self.tool_call_format = tool_call_format

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
    def _read(self, action: Any) -> AssistantTurn | tuple:
        """The turn `action` holds; for an unreadable one, the finished step saying why."""
        try:
            return read_action(
                action,
                max_chars=self.max_action_chars,
                tool_call_format=self.tool_call_format,
                has_tools=self._has_tools,
            )
        except InvalidAction as e:
            return self._finish(unreadable_reply(action), self._format_error(str(e)))

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

    def _finish(self, assistant: Message, result: StepResult | tuple):
        # `assistant`: the turn as recorded (the reply's message, or a stand-in for an unreadable one).
        # `result`: a StepResult or the plain 5-tuple it stands for.
        messages, reward, terminated, truncated, info = result
        self.turn = turn_number = self.turn + 1
        transcript = self.transcript
        transcript.append(assistant)
        transcript += messages
        if type(reward) is not float:  # float() of a float is a call for nothing
            reward = float(reward)
        self.total_reward += reward
        if terminated or truncated:
            self.episode_over = True
            self._ended_as = (bool(terminated), bool(truncated))
        if not info:  # the usual turn says nothing more: its info is built whole, not key by key
            return messages, reward, terminated, truncated, {"format_error": None, "turn": turn_number}
        if "format_error" not in info:
            info["format_error"] = None
        info["turn"] = turn_number
        return messages, reward, terminated, truncated, info
