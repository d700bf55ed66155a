"""TextEnv: a Gymnasium env whose observations are chat messages and whose actions are assistant turns."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import gymnasium as gym

from envs.assistant_turn import AssistantTurn, ToolCallRequest, read_action
from envs.errors import InvalidAction
from envs.messages import Message, tool_result, user
from envs.run_sync import run_sync
from envs.spaces import AssistantAction, ChatMessages
from envs.step_result import StepResult

if TYPE_CHECKING:
    from tools import Tool, ToolResult


class TextEnv(gym.Env):
    """A multi-turn text environment.

    `reset(seed, options) -> (messages, info)` returns the opening conversation; `step(action) ->
    (messages, reward, terminated, truncated, info)` returns the messages to append. `action` is the
    assistant's text or a parsed assistant message (content + OpenAI-style `tool_calls`). Tool calls go
    to the env's tools (its own plus any given by list or YAML path); results come back as `tool`
    messages. An action the env cannot read never raises: the reply says what was wrong and
    `info["format_error"]` is set. Subclasses implement `_reset` and `_respond` (and may add tools
    through `own_tools`).
    """

    metadata = {"render_modes": ["ansi", "human"], "render_fps": 4}
    #: How tool calls written in the reply text are recognised (see `tools.calls`).
    tool_call_format: str | None = "hermes"
    #: What the agent is told about the expected reply when its reply cannot be used.
    action_help: str = ""

    def __init__(
        self,
        *,
        tools: Sequence[Tool] | str | Path | None = None,
        render_mode: str | None = None,
        max_action_chars: int = 32768,
    ):
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"render_mode must be one of {self.metadata['render_modes']}, got {render_mode!r}"
            )
        self.render_mode = render_mode
        self.max_action_chars = max_action_chars
        self.observation_space = ChatMessages()
        self.action_space = AssistantAction(max_action_chars)
        self._extra_tools_arg = tools
        self._tool_prototypes: list[Tool] | None = None
        self._episode_tools: dict[str, Tool] = {}
        self.transcript: list[Message] = []
        self.turn = 0
        self.episode_over = False
        self.total_reward = 0.0

    # ----- what subclasses implement -------------------------------------------------------------
    def _reset(self, options: dict[str, Any]) -> tuple[list[Message], dict[str, Any]]:
        """Start an episode with `self.np_random`; return the opening messages and info."""
        raise NotImplementedError

    def _respond(self, turn: AssistantTurn) -> StepResult:
        """React to an assistant turn that holds no tool call."""
        raise NotImplementedError

    async def _arespond(self, turn: AssistantTurn) -> StepResult:
        """Async twin of `_respond`; override when the reaction does I/O."""
        return self._respond(turn)

    def own_tools(self) -> list[Tool]:
        """Tools this env provides itself (e.g. a game's `guess` tool)."""
        return []

    def _after_tool_call(
        self, call: ToolCallRequest, result: ToolResult, turn_info: dict
    ) -> StepResult | None:
        """Hook after each tool call; return a StepResult to end or redirect the turn (e.g. `submit`)."""
        return None

    def expert_action(self) -> str:
        """The scripted expert's next reply (text), for baselines, tests and demonstrations."""
        raise NotImplementedError(f"{type(self).__name__} has no scripted expert")

    # ----- tools ---------------------------------------------------------------------------------
    @property
    def tools(self) -> list[Tool]:
        """All tools the agent may call in this env: its own, then the extra ones it was given."""
        if self._tool_prototypes is None:
            prototypes = list(self.own_tools())
            extra = self._extra_tools_arg
            if isinstance(extra, str | Path):
                from tools import load_tools

                extra = load_tools(extra)
            prototypes.extend(extra or ())
            names = [t.name for t in prototypes]
            duplicates = sorted({n for n in names if names.count(n) > 1})
            if duplicates:
                raise ValueError(f"{type(self).__name__}: duplicate tool names {duplicates}")
            self._tool_prototypes = prototypes
        return self._tool_prototypes

    @property
    def tool_schemas(self) -> list[dict]:
        """OpenAI function schemas of `tools`, as rendered into the prompt by a chat template."""
        return [t.schema for t in self.tools]

    # ----- the Gymnasium API ---------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Start a new episode; the same seed and options give the same episode."""
        super().reset(seed=seed)
        self._release_episode_tools()
        self.turn = 0
        self.total_reward = 0.0
        self.episode_over = False
        messages, info = self._reset(dict(options or {}))
        self.transcript = list(messages)
        return messages, info

    def step(self, action: Any):
        """Play one assistant turn; returns (messages, reward, terminated, truncated, info)."""
        turn, problem = self._read(action)
        if turn is not None and (turn.tool_calls or turn.call_errors) and not self.episode_over:
            return run_sync(self.astep(action))
        if problem is not None:
            return self._finish(action, None, self._format_error(problem))
        if self.episode_over:
            return self._finish(action, turn, self._after_end())
        return self._finish(action, turn, self._respond(turn))

    async def astep(self, action: Any):
        """Async `step`: tool calls and I/O-bound envs run without blocking the event loop."""
        turn, problem = self._read(action)
        if problem is not None:
            return self._finish(action, None, self._format_error(problem))
        if self.episode_over:
            return self._finish(action, turn, self._after_end())
        if turn.tool_calls or turn.call_errors:
            result = await self._run_tool_calls(turn)
        else:
            result = await self._arespond(turn)
        return self._finish(action, turn, result)

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
                tool_call_format=self.tool_call_format if self.tools else None,
            ), None
        except InvalidAction as e:
            return None, str(e)

    def _format_error(self, problem: str) -> StepResult:
        help_text = f" {self.action_help}" if self.action_help else ""
        return StepResult(
            [user(f"Your reply could not be used: {problem}.{help_text}")], info={"format_error": problem}
        )

    def _after_end(self) -> StepResult:
        return StepResult(
            [user("The episode has ended; no further actions are taken.")],
            terminated=True,
            info={"format_error": "action after the episode ended"},
        )

    def _finish(self, action: Any, turn: AssistantTurn | None, result: StepResult):
        self.turn += 1
        self.transcript.append(turn.as_message() if turn is not None else _placeholder(action))
        self.transcript.extend(result.messages)
        self.total_reward += result.reward
        if result.terminated or result.truncated:
            self.episode_over = True
        info = result.info
        info.setdefault("format_error", None)
        info["turn"] = self.turn
        return result.messages, float(result.reward), result.terminated, result.truncated, info

    async def _run_tool_calls(self, turn: AssistantTurn) -> StepResult:
        messages: list[Message] = []
        reward = 0.0
        turn_info: dict[str, Any] = {"tool_calls": len(turn.tool_calls), "tool_errors": len(turn.call_errors)}
        if turn.call_errors:
            messages.append(user("Some tool calls could not be read: " + "; ".join(turn.call_errors)))
        ended: StepResult | None = None
        for call in turn.tool_calls:
            if ended is not None:
                messages.append(
                    tool_result(call.id, call.name, "Not run: the episode ended at an earlier call.")
                )
                continue
            tool = self._episode_tool(call.name)
            if tool is None:
                available = ", ".join(t.name for t in self.tools) or "none"
                turn_info["tool_errors"] += 1
                messages.append(
                    tool_result(
                        call.id,
                        call.name,
                        f"Error: unknown tool `{call.name}`. Available tools: {available}.",
                    )
                )
                continue
            result = await tool.call(call.arguments, context={"env": self, "info": turn_info})
            turn_info["tool_errors"] += int(result.is_error)
            reward += result.reward or 0.0
            messages.append(tool_result(call.id, call.name, result.content))
            redirect = self._after_tool_call(call, result, turn_info)
            if redirect is not None:
                messages.extend(redirect.messages)
                reward += redirect.reward
                turn_info.update(redirect.info)
                if redirect.terminated or redirect.truncated:
                    ended = redirect
            elif result.terminate:
                ended = StepResult([], terminated=True)
        if turn.content.strip() and not turn.tool_calls:
            messages.append(user("No tool call was run."))
        return StepResult(
            messages,
            reward,
            terminated=bool(ended and ended.terminated),
            truncated=bool(ended and ended.truncated),
            info=turn_info,
        )

    def _episode_tool(self, name: str) -> Tool | None:
        tool = self._episode_tools.get(name)
        if tool is None:
            prototype = next((t for t in self.tools if t.name == name), None)
            if prototype is None:
                return None
            # Stateful tools get a fresh instance per episode, made on first use and released at reset.
            tool = self._episode_tools[name] = prototype.fork()
        return tool

    def _release_episode_tools(self) -> None:
        if not self._episode_tools:
            return
        tools, self._episode_tools = list(self._episode_tools.values()), {}

        async def release() -> None:
            for t in tools:
                # Releasing one tool must not stop the others or the next episode.
                with contextlib.suppress(Exception):
                    await t.aclose()

        run_sync(release())


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
            body += f"\n→ {fn.get('name')}({fn.get('arguments')})"
        blocks.append(f"[{head}]\n{body}")
    return "\n\n".join(blocks)
