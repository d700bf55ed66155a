"""TextEnv: a Gymnasium env whose observations are chat messages and whose actions are assistant turns."""

from __future__ import annotations

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
from envs.core.tool_host import ToolHost, build_tool_host
from envs.core.transcript import render_transcript, unreadable_reply
from envs.core.turn_limits import (
    DEFAULT_MAX_ACTION_CHARS,
    DEFAULT_MAX_TOOL_CALLS_PER_TURN,
    DEFAULT_MAX_TOOL_TIME_S,
    checked_action_chars,
)
from turngym.chat.calls.formats import get_format
from turngym.chat.message import Message, user
from turngym.common.run_sync import run_sync

T = TypeVar("T")

if TYPE_CHECKING:
    from tools import Tool


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
    door too (`envs.core.paired_doors`). They declare the `reset(options=...)` keys they read in
    `reset_options` and may reword the reply to an unusable turn in `_format_error`. An env with tools of
    its own defines `own_tools()`, and one that reacts to a tool result `after_tool_call(call, result,
    turn_info)`: the tool layer calls them when the env has them (`envs.tool_layer.env_tools`); an env
    with a scripted expert or random player implements `envs.core.scripted_players`' protocols.
    The spaces are attributes set once (`observation_space`, `action_space`), as in Gymnasium.

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
        self.observation_space = ChatMessages()
        self.action_space = AssistantAction(self.max_action_chars)
        #: The tool layer (`envs.tool_layer.env_tools.EnvTools`): the tools, their per-episode copies, the
        #: per-turn tool limits. Built here so a bad `tools=` or limit fails at `make`, not at the first call.
        self.env_tools: ToolHost = build_tool_host(
            self, tools, max_tool_calls_per_turn=max_tool_calls_per_turn, max_tool_time_s=max_tool_time_s
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

    # ----- what subclasses implement -------------------------------------------------------------
    def _reset(self, options: dict[str, Any]) -> tuple[list[Message], dict[str, Any]]:
        """Start an episode with `self.np_random`; return the opening messages and info (may be `async`)."""
        raise NotImplementedError

    def _respond(self, turn: AssistantTurn) -> StepResult:
        """React to an assistant turn that holds no tool call (may be `async` when it does I/O)."""
        raise NotImplementedError

    def _format_error(self, problem: str) -> StepResult:
        """The reply to a turn that could not be used: what was wrong, then `action_help` (a game may add to it)."""
        help_text = f" {self.action_help}" if self.action_help else ""
        return StepResult(
            [user(f"Your reply could not be used: {problem}.{help_text}")], info={"format_error": problem}
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
        self.env_tools.release()
        opened = _open_episode(self, seed, options)
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
        await self.env_tools.arelease()
        opened = _open_episode(self, seed, options)
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
        done = _play_turn(self, action)
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
        done = _play_turn(self, action)
        return done if isinstance(done, tuple) else await done

    def check_reset_options(self, options: Any) -> dict[str, Any]:
        """`options` as a new dict, checked against `reset_options`; raises InvalidOptions naming valid ones."""
        return check_options(type(self).__name__, self.reset_options, options)

    # ----- tools and limits: the tool layer's, under the names of the env contract ------------------
    @property
    def tools(self) -> list[Tool]:
        """All tools the agent may call in this env, in order (`env_tools.registry` holds them)."""
        return list(self.env_tools.registry)

    @property
    def tool_schemas(self) -> list[dict]:
        """OpenAI function schemas of `tools`, as rendered into the prompt by a chat template."""
        return self.env_tools.registry.schemas()

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
            >>> env.unwrapped.env_tools.max_tool_calls_per_turn, env.unwrapped.env_tools.max_tool_time_s
            (2, 5.0)
        """
        if max_action_chars is not None:
            self.max_action_chars = checked_action_chars(max_action_chars)
            self.action_space = AssistantAction(self.max_action_chars)
        self.env_tools.set_limits(
            max_tool_calls_per_turn=max_tool_calls_per_turn, max_tool_time_s=max_tool_time_s
        )

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
        self.env_tools.release()
        super().close()


# ----- the one reset path and the one step path, shared by both doors -----------------------------------
def _open_episode(env: TextEnv, seed: int | None, options: dict[str, Any] | None):
    """The opening of a new episode, or (an async `_reset`) a coroutine the caller's door waits on."""
    checked = {} if options is None else env.check_reset_options(options)
    if seed is not None:  # None continues the streams
        env._record_seed(seed)
    env.turn = 0
    env.total_reward = 0.0
    env.episode_over = False
    env._ended_as = (False, False)
    env._has_reset = True
    opened = env._reset(checked)
    return _record_opening(env, opened) if isinstance(opened, tuple) else _then(opened, _record_opening, env)


def _record_opening(env: TextEnv, opened: tuple[list[Message], dict[str, Any]]):
    messages, info = opened
    env.transcript = list(messages)
    return messages, info


def _play_turn(env: TextEnv, action: Any):
    """The finished step, or (a tool turn, an async `_respond`) a coroutine the caller's door waits on."""
    if not env._has_reset:
        raise ResetNeeded(f"{type(env).__name__}: call reset() before step(); no episode has started")
    if env.episode_over:
        # Nothing is parsed, run or recorded, and the reward is exactly 0: an ended episode pays nothing.
        return refusal_after_end(*env._ended_as, env.turn)
    try:
        turn = read_action(
            action,
            max_chars=env.max_action_chars,
            tool_call_format=env.tool_call_format,
            has_tools=env.env_tools.has_tools,
        )
    except InvalidAction as e:
        return _record_turn(env, unreadable_reply(action), env._format_error(str(e)))
    said = turn.as_message()
    result = env.env_tools.run_turn(turn) if turn.tool_calls or turn.call_errors else env._respond(turn)
    return (
        _record_turn(env, said, result)
        if isinstance(result, tuple)
        else _then(result, _record_turn, env, said)
    )


def _record_turn(env: TextEnv, assistant: Message, result: StepResult | tuple):
    """Record a played turn and return the step's 5-tuple.

    `assistant` is the turn as recorded (the reply's message, or a stand-in for an unreadable one);
    `result` a StepResult or the plain 5-tuple it stands for.
    """
    messages, reward, terminated, truncated, info = result
    env.turn += 1
    env.transcript.append(assistant)
    env.transcript += messages
    reward = float(reward)
    env.total_reward += reward
    if terminated or truncated:
        env.episode_over = True
        env._ended_as = (bool(terminated), bool(truncated))
    if not info:
        info = {}
    info.setdefault("format_error", None)
    info["turn"] = env.turn
    return messages, reward, terminated, truncated, info


async def _then(pending: Awaitable[Any], finish: Callable[..., T], *args: Any) -> T:
    """`finish(*args, what pending gives)`: the rest of a reset or step whose hook had to wait."""
    return finish(*args, await pending)
