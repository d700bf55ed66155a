"""TextEnv: a Gymnasium env whose observations are chat messages and whose actions are assistant turns."""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from envs.core.assistant_turn import AssistantTurn, read_action
from envs.core.episode_end import refusal_after_end
from envs.core.errors import InvalidAction, ResetNeeded
from envs.core.lazy_seeding import LazySeeding
from envs.core.paired_doors import pair_doors
from envs.core.reset_options import check_options
from envs.core.reset_options import describe_options as describe_options  # public here before the split
from envs.core.spaces import AssistantAction, ChatMessages
from envs.core.step_result import StepResult
from envs.core.transcript import render_transcript, unreadable_reply
from envs.tool_layer.env_tools import EnvTools
from envs.tool_layer.extra_tools import resolve_extra_tools
from envs.tool_layer.turn_limits import (
    DEFAULT_MAX_ACTION_CHARS,
    DEFAULT_MAX_TOOL_CALLS_PER_TURN,
    DEFAULT_MAX_TOOL_TIME_S,
    checked_action_chars,
)
from turngym.chat.calls.formats import get_format, may_hold_calls
from turngym.chat.message import Message, user
from turngym.common.run_sync import run_sync

T = TypeVar("T")

if TYPE_CHECKING:
    from tools import Tool, ToolResult
    from tools.registry import ToolRegistry
    from turngym.chat.calls import ToolCall


class TextEnv(LazySeeding):
    """A multi-turn text environment: the env contract (`envs.core.protocol.EnvProtocol`) on chat messages.

    `reset` returns the opening conversation and `step` the messages to append. An action is the
    assistant's text or a parsed assistant message (content + OpenAI-style `tool_calls`). Tool calls go to
    the env's tool layer (`env_tools`, an `envs.tool_layer.env_tools.EnvTools`: its own tools plus any given by
    `tools=`) and come back as `tool` messages. An action the env cannot read never raises: the reply says
    what was wrong and `info["format_error"]` is set. After the episode ends, `step` takes no action and
    pays nothing until `reset`; `step` before the first `reset` raises `ResetNeeded`.

    Subclasses implement `_reset` and `_respond`, each a plain method or an `async def` when it does I/O
    (one hook each: `step`/`reset` run the async ones to completion, `astep`/`areset` await them). A
    subclass that overrides a door itself (`step` only, say) is played through that override by the other
    door too (`envs.core.paired_doors`). They
    may add tools through `own_tools`, see each tool result in `after_tool_call`, and declare the
    `reset(options=...)` keys they read in `reset_options`.

    Args:
        tools: Extra tools: built-in names, YAML paths or Tool objects (see `envs.tool_layer.extra_tools`).
        render_mode: "ansi" (`render` returns the transcript) or "human" (it prints it).
        max_action_chars: The longest reply read; a longer one is a format error.
        max_tool_calls_per_turn: Calls past this many in one turn are not run (None: no cap).
        max_tool_time_s: Seconds of tool time one turn may use in all (None: no budget).

    Example:
        >>> from turngym.chat.message import user
        >>> from envs.core.step_result import StepResult
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
    #: How tool calls written in the reply text are recognised (see `turngym.chat.calls`). The rollout sets it
    #: per episode to the format its chat template writes (`set_tool_call_format`).
    tool_call_format: str | None = "hermes"
    #: What the agent is told about the expected reply when its reply cannot be used.
    action_help: str = ""
    #: The `reset(options=...)` keys this env reads, each with what it accepts (see `envs.core.reset_options`).
    #: Other keys and values raise InvalidOptions naming the valid ones. None checks nothing.
    reset_options: ClassVar[dict[str, Any] | None] = None

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
        self.max_action_chars = checked_action_chars(max_action_chars)
        if (
            tools is not None
            or max_tool_calls_per_turn is not DEFAULT_MAX_TOOL_CALLS_PER_TURN
            or max_tool_time_s is not DEFAULT_MAX_TOOL_TIME_S
        ):
            # Resolved now so a bad `tools=` or limit fails at `make`, not at the first tool call.
            extra = resolve_extra_tools(tools) if tools is not None else ()
            self._env_tools = EnvTools(
                self, extra, max_tool_calls_per_turn=max_tool_calls_per_turn, max_tool_time_s=max_tool_time_s
            )
        self.transcript: list[Message] = []
        self.turn = 0
        self.total_reward = 0.0
        self.episode_over = False
        self._ended_as = (False, False)  # (terminated, truncated) of the step that ended the episode
        self._has_reset = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # A subclass that overrides one door only (`step`, not `astep`) is played through its override by
        # both: training and served envs call the async doors, scripts the sync ones (envs/core/paired_doors.py).
        super().__init_subclass__(**kwargs)
        pair_doors(cls, TextEnv)

    # The tool layer of an env made with the defaults is built on first use: most episodes never call a
    # tool, and building it per `make` measured `envs.make` 2.5 -> 3.1 us (bench/env_throughput.py).
    _env_tools: EnvTools | None = None

    @property
    def env_tools(self) -> EnvTools:
        """The tool layer (`envs.tool_layer.env_tools.EnvTools`): tools, per-episode copies, per-turn tool limits."""
        if self._env_tools is None:
            self._env_tools = EnvTools(self)
        return self._env_tools

    # ----- what subclasses implement -------------------------------------------------------------
    def _reset(self, options: dict[str, Any]) -> tuple[list[Message], dict[str, Any]]:
        """Start an episode with `self.np_random`; return the opening messages and info (may be `async`)."""
        raise NotImplementedError

    def _respond(self, turn: AssistantTurn) -> StepResult:
        """React to an assistant turn that holds no tool call (may be `async` when it does I/O)."""
        raise NotImplementedError

    def own_tools(self) -> list[Tool]:
        """Tools this env provides itself (e.g. a game's `guess` tool)."""
        return []

    def after_tool_call(self, call: ToolCall, result: ToolResult, turn_info: dict) -> StepResult | None:
        """Hook after each tool call, in call order; return a StepResult to end or redirect the turn."""
        legacy = getattr(self, "_after_tool_call", None)  # the hook's name before it was public
        return None if legacy is None else legacy(call, result, turn_info)

    def expert_action(self) -> str:
        """The scripted expert's next reply (text), for baselines, tests and demonstrations."""
        raise NotImplementedError(f"{type(self).__name__} has no scripted expert")

    def random_action(self, rng: random.Random) -> str:
        """A uniformly random legal-looking move (text), drawn from `rng`: the random player of the baselines
        and the noise of a noisy demonstrator.

        Args:
            rng: a stdlib ``random.Random`` seeded by the caller per episode (the baseline players, the
                warm start and ``envs check`` all pass one): draw with ``rng.randint``, ``rng.choice``,
                ``rng.random``. It is not the env's own ``np_random`` (numpy's Generator, which has
                ``integers``); for numpy draws use ``numpy.random.default_rng(rng.getrandbits(64))``.

        Returns:
            The move, as the assistant's reply text.

        >>> import envs, random
        >>> env = envs.make("guess-number-v0", difficulty="easy")
        >>> _ = env.reset(seed=0)
        >>> env.unwrapped.random_action(random.Random(0)).isdigit()
        True
        """
        raise NotImplementedError(
            f"{type(self).__name__} has no random_action; set turngym.warm_start.expert_noise=0 for it"
        )

    # ----- the Gymnasium API: one code path each for reset and step, waited on by the sync or async door
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
        if self._env_tools is not None:
            self._env_tools.release()
        opened = self._run_reset(seed, options, True)
        return opened if isinstance(opened, tuple) else run_sync(opened)

    async def areset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """`reset` on the caller's event loop: the last episode's tools are released and `_reset` awaited.

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
        if self._env_tools is not None:
            await self._env_tools.arelease()
        opened = self._run_reset(seed, options, False)
        return opened if isinstance(opened, tuple) else await opened

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
        done = self._run_step(action, True)
        # A call the time budget cut keeps its thread until it ends: the step does not wait for it.
        return done if isinstance(done, tuple) else run_sync(done, wait_for_threads=False)

    async def astep(self, action: Any):
        """`step` on the caller's event loop: tool calls and I/O-bound envs run without blocking it.

        Args:
            action: As for `step`.

        Returns:
            What `step` returns for the same action.

        Example:
            >>> import asyncio, envs
            >>> env = envs.make("guess-number-v0")
            >>> _ = env.reset(seed=0)
            >>> asyncio.run(env.astep("50"))[0][0]["content"]
            '50 is too low. Guess a higher number.'
        """
        done = self._run_step(action, False)
        return done if isinstance(done, tuple) else await done

    def _run_reset(self, seed: int | None, options: dict[str, Any] | None, blocking: bool):
        # The one reset path: the opening, or (an async `_reset`) a coroutine the caller's door waits on.
        # `blocking` (from `reset`) only picks the old async twin `_areset` of envs that still have one.
        checked = self._begin_episode(seed, options)
        opened = (self._reset if blocking else getattr(self, "_areset", self._reset))(checked)
        return self._opened(opened) if isinstance(opened, tuple) else _then(opened, self._opened)

    def _begin_episode(self, seed: int | None, options: dict[str, Any] | None) -> dict[str, Any]:
        # The bookkeeping before the subclass opens the episode; returns the checked options.
        checked = {} if options is None else self.check_reset_options(options)
        if seed is not None:  # None continues the streams
            self._record_seed(seed)
        self.turn = 0
        self.total_reward = 0.0
        self.episode_over = False
        self._ended_as = (False, False)
        self._has_reset = True
        return checked

    def _opened(self, opened: tuple[list[Message], dict[str, Any]]) -> tuple[list[Message], dict[str, Any]]:
        messages, info = opened
        self.transcript = list(messages)
        return messages, info

    def _run_step(self, action: Any, blocking: bool):
        # The one step path: the finished step, or (a tool turn, an async `_respond`) a coroutine the
        # caller's door waits on. `blocking` (from `step`) only picks the old async twin `_arespond`.
        if not self._has_reset:
            raise ResetNeeded(f"{type(self).__name__}: call reset() before step(); no episode has started")
        if self.episode_over:
            # Nothing is parsed, run or recorded, and the reward is exactly 0: an ended episode pays nothing.
            return refusal_after_end(*self._ended_as, self.turn)
        fmt = self.tool_call_format
        if (
            type(action) is str
            and len(action) <= self.max_action_chars
            and action.isprintable()
            and not (fmt and may_hold_calls(action, fmt))
        ):
            # Printable text without a marker of the env's call format holds no call and nothing to
            # clean: `read_action` would return it as it is. Most steps of most envs; without this path
            # the bench's reused row measured 258k instead of 268k steps/s.
            said = {"role": "assistant", "content": action}
            respond = self._respond if blocking else getattr(self, "_arespond", self._respond)
            result = respond(AssistantTurn(action))
        else:
            turn = self._read(action)
            if not isinstance(turn, AssistantTurn):  # unreadable: the finished step saying why
                return turn
            said = turn.as_message()
            if turn.tool_calls or turn.call_errors:
                result = self.env_tools.run_turn(turn)
            else:
                respond = self._respond if blocking else getattr(self, "_arespond", self._respond)
                result = respond(turn)
        if isinstance(result, tuple):
            return self._finish(said, result)
        return _then(result, self._finish, said)

    def check_reset_options(self, options: Any) -> dict[str, Any]:
        """`options` as a new dict, checked against `reset_options`; raises InvalidOptions naming valid ones."""
        return check_options(type(self).__name__, self.reset_options, options)

    # ----- tools and limits: the tool layer's, under the names of the env contract ------------------
    @property
    def tool_registry(self) -> ToolRegistry:
        """The env's tools as a `tools.ToolRegistry`: its own, then the extra ones it was given."""
        return self.env_tools.registry

    @property
    def tools(self) -> list[Tool]:
        """All tools the agent may call in this env, in order (see `tool_registry`)."""
        return list(self.env_tools.registry)

    @property
    def tool_schemas(self) -> list[dict]:
        """OpenAI function schemas of `tools`, as rendered into the prompt by a chat template."""
        return self.env_tools.registry.schemas()

    @property
    def max_tool_calls_per_turn(self) -> int | None:
        """Calls past this many in one turn are not run (None: no cap); see `set_turn_limits`."""
        return self.env_tools.max_tool_calls_per_turn

    @property
    def max_tool_time_s(self) -> float | None:
        """Seconds of tool time one turn may use in all (None: no budget); see `set_turn_limits`."""
        return self.env_tools.max_tool_time_s

    def set_turn_limits(
        self,
        *,
        max_action_chars: int | None = None,
        max_tool_calls_per_turn: int | None | Any = ...,
        max_tool_time_s: float | None | Any = ...,
    ) -> None:
        """Change the reply size limit and the per-turn tool limits (None: no limit; omitted: unchanged).

        Args:
            max_action_chars: The longest reply read (None: unchanged).
            max_tool_calls_per_turn: Calls past this many in one turn are not run (None: no cap).
            max_tool_time_s: Seconds of tool time one turn may use in all (None: no budget).

        Example:
            >>> import envs
            >>> env = envs.make("guess-number-v0")
            >>> env.set_turn_limits(max_tool_calls_per_turn=2, max_tool_time_s=5)
            >>> env.unwrapped.max_tool_calls_per_turn, env.unwrapped.max_tool_time_s
            (2, 5.0)
        """
        if max_action_chars is not None:
            self.max_action_chars = checked_action_chars(max_action_chars)
            self._action_space = None  # a new one, with the new limit, on next use
        self.env_tools.set_limits(
            max_tool_calls_per_turn=max_tool_calls_per_turn, max_tool_time_s=max_tool_time_s
        )

    # The spaces are built on first read: most envs made per episode never read them, and building both
    # per `make` measured +1.0 us on a 2.3 us `envs.make` (bench/env_throughput.py, GC on).
    _observation_space: ChatMessages | None = None
    _action_space: AssistantAction | None = None

    @property
    def observation_space(self) -> ChatMessages:
        """Lists of chat messages (`envs.core.spaces.ChatMessages`)."""
        if self._observation_space is None:
            self._observation_space = ChatMessages()
        return self._observation_space

    @observation_space.setter
    def observation_space(self, space: ChatMessages) -> None:
        self._observation_space = space

    @property
    def action_space(self) -> AssistantAction:
        """Assistant turns within `max_action_chars` (`envs.core.spaces.AssistantAction`)."""
        if self._action_space is None:
            self._action_space = AssistantAction(self.max_action_chars)
        return self._action_space

    @action_space.setter
    def action_space(self, space: AssistantAction) -> None:
        self._action_space = space

    def set_tool_call_format(self, tool_call_format: str | None) -> None:
        """Read tool calls written in reply text in this format (None: text is never read as calls)."""
        if tool_call_format is not None:
            try:
                get_format(tool_call_format)
            except KeyError as e:
                raise ValueError(f"tool_call_format: {e.args[0]}") from None
        self.tool_call_format = tool_call_format

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
        if self._env_tools is not None:
            self._env_tools.release()
        super().close()

    # ----- internals -----------------------------------------------------------------------------
    def _read(self, action: Any) -> AssistantTurn | tuple:
        """The turn `action` holds; for an unreadable one, the finished step saying why."""
        try:
            return read_action(
                action,
                max_chars=self.max_action_chars,
                tool_call_format=self.tool_call_format,
                has_tools=self.env_tools.has_tools,
            )
        except InvalidAction as e:
            return self._finish(unreadable_reply(action), self._format_error(str(e)))

    def _format_error(self, problem: str) -> StepResult:
        help_text = f" {self.action_help}" if self.action_help else ""
        return StepResult(
            [user(f"Your reply could not be used: {problem}.{help_text}")], info={"format_error": problem}
        )

    def _finish(self, assistant: Message, result: StepResult | tuple):
        # `assistant`: the turn as recorded (the reply's message, or a stand-in for an unreadable one).
        # `result`: a StepResult or the plain 5-tuple it stands for.
        messages, reward, terminated, truncated, info = result
        self.turn = turn_number = self.turn + 1
        transcript = self.transcript
        transcript.append(assistant)
        transcript += messages
        # This and the whole-info return below: without them the bench measured 2-3 % fewer steps/s.
        if type(reward) is not float:
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


async def _then(pending: Awaitable[Any], finish: Callable[..., T], *args: Any) -> T:
    """`finish(*args, what pending gives)`: the rest of a reset or step whose hook had to wait."""
    return finish(*args, await pending)
