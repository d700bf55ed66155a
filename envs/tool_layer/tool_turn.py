"""One turn's tool calls: run within the turn's limits, independent ones at the same time, results in call order.

Calls to tools marked `concurrent` (pure functions, a fresh sandbox per call) that follow each other in a
reply run together, as verl's tool agent loop runs a turn's calls (`asyncio.gather`); any other call (an
env's game move, an edit in the episode's repository, a stateful interpreter) runs alone, after the calls
before it finished, so calls that build on each other see each other's effects. Either way the results,
the env's `after_tool_call` hook and the rewards are taken in call order.

Limits, per turn: at most `max_tool_calls_per_turn` calls run, within `max_tool_time_s` seconds in all.
Calls past the count cap, calls after one that ended the episode, and calls after the budget ran out get
a "Not run: ..." tool message; calls still running when the budget runs out are cancelled ("Cut: ...").
One call's failure is that call's error message: it never spoils the others.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from envs.core.step_result import StepResult
from turngym.chat.message import Message, tool_result, user

if TYPE_CHECKING:
    from envs.core.assistant_turn import AssistantTurn
    from tools import Tool, ToolResult
    from tools.registry import ToolRegistry
    from turngym.chat.calls import ToolCall


class ToolTurnHost(Protocol):
    """What running a turn's calls needs of the tool layer (`envs.tool_layer.env_tools.EnvTools` is one)."""

    env: Any  # the `env` in each call's context
    max_tool_calls_per_turn: int | None
    max_tool_time_s: float | None

    @property
    def registry(self) -> ToolRegistry:
        """All tools, for the names an unknown call is told about."""
        ...

    def episode_tool(self, name: str) -> Tool | None:
        """This episode's instance of the tool called `name`."""
        ...

    def after_tool_call(self, call: ToolCall, result: ToolResult, turn_info: dict) -> StepResult | None:
        """The hook after each call, in call order."""
        ...


@dataclass
class _Cut:
    """A call the turn's time budget cancelled, after `ran` seconds."""

    ran: float


@dataclass
class _TurnRun:
    """The state of one turn's calls while they run."""

    host: ToolTurnHost
    calls: list[ToolCall]
    deadline: float | None
    messages: list[Message] = field(default_factory=list)
    reward: float = 0.0
    info: dict[str, Any] = field(default_factory=dict)
    ended: StepResult | None = None
    cuts: list[tuple[int, str, float]] = field(default_factory=list)  # (index, name, seconds it ran)
    used_up_at: int | None = None  # first call not run because earlier calls used the whole budget


async def run_tool_turn(host: ToolTurnHost | Any, turn: AssistantTurn) -> StepResult:
    """Run the tool calls of `turn` within the per-turn limits; one tool message per call.

    Args:
        host: The tool layer (`envs.tool_layer.env_tools.EnvTools`, or an env, whose `env_tools` is taken): its
            episode tools answer the calls, its `max_tool_calls_per_turn` and `max_tool_time_s` bound the
            turn, and its `after_tool_call` hook sees each result in call order.
        turn: The assistant turn, with its parsed `tool_calls` and the `call_errors` of calls it could
            not read.

    Returns:
        The tool messages in call order, then notes on unreadable, capped or cut calls; the rewards the
        tools and the hook paid; the end flags when a call ended the episode; and `info` with
        `tool_calls`, `tool_errors`, `tool_calls_not_run` and `tool_call_cut` (the first cut call's name).
    """
    import asyncio  # here, not at module level: `import envs` stays without it (most envs never need it)

    host = getattr(host, "env_tools", host)  # an env: its tool layer
    loop = asyncio.get_running_loop()
    budget = host.max_tool_time_s
    run = _TurnRun(host, list(turn.tool_calls), None if budget is None else loop.time() + budget)
    run.info = {
        "tool_calls": len(run.calls),
        "tool_errors": len(turn.call_errors),
        "tool_calls_not_run": 0,
        "tool_call_cut": None,
    }
    index = 0
    while index < len(run.calls):
        reason = _why_not_run(run, index, loop.time())
        if reason is not None:
            _not_run(run, index, reason)
            index += 1
            continue
        batch = _next_batch(run, index, loop.time())
        outcomes = await asyncio.gather(*(_invoke(run, i, tool) for i, tool in batch))
        for (i, _), outcome in zip(batch, outcomes, strict=True):
            _take(run, i, outcome)
        index = batch[-1][0] + 1
    # Notes follow the tool messages: templates that pair calls with results need those right after the calls.
    run.messages.extend(user(note) for note in _notes(run, turn.call_errors))
    return StepResult(
        run.messages,
        run.reward,
        terminated=bool(run.ended and run.ended.terminated),
        truncated=bool(run.ended and run.ended.truncated),
        info=run.info,
    )


def _next_batch(run: _TurnRun, first: int, now: float) -> list[tuple[int, Tool | None]]:
    """The calls that start now: call `first`, and the concurrent calls right after it when it is one."""
    tool = run.host.episode_tool(run.calls[first].name)
    batch = [(first, tool)]
    if tool is not None and not tool.concurrent:
        return batch
    for i in range(first + 1, len(run.calls)):
        if _why_not_run(run, i, now) is not None:
            break
        tool = run.host.episode_tool(run.calls[i].name)
        if tool is not None and not tool.concurrent:
            break
        batch.append((i, tool))  # an unknown tool joins: it is an error message, nothing runs
    return batch


async def _invoke(run: _TurnRun, index: int, tool: Tool | None) -> ToolResult | _Cut | None:
    """The call's result, `_Cut` when the budget cancelled it, None for an unknown tool."""
    import asyncio

    from tools import ToolResult

    if tool is None:
        return None
    call = run.calls[index]
    loop = asyncio.get_running_loop()
    started = loop.time()
    remaining = None if run.deadline is None else max(0.0, run.deadline - started)
    try:
        # The budget cancels the call itself: its output is lost.
        return await asyncio.wait_for(
            tool.call(call.arguments, context={"env": run.host.env, "info": run.info}), remaining
        )
    except TimeoutError:
        return _Cut(loop.time() - started)
    except (
        Exception
    ) as e:  # `Tool.call` never raises, but a subclass's own `call` may: this call's error only
        return ToolResult.error(f"tool `{call.name}` failed: {type(e).__name__}: {str(e)[:500]}")


def _take(run: _TurnRun, index: int, outcome: ToolResult | _Cut | None) -> None:
    """Record one call's outcome, in call order: its message, reward, the env's hook, the end."""
    call, info = run.calls[index], run.info
    if outcome is None:
        available = ", ".join(run.host.registry.names) or "none"
        info["tool_errors"] += 1
        text = f"Error: unknown tool `{call.name}`. Available tools: {available}."
        run.messages.append(tool_result(call.id, call.name, text))
        return
    if run.ended is not None:  # it ran beside the call that ended the episode: its result is not used
        info["tool_calls_not_run"] += 1
        text = "Not used: the episode ended at an earlier call (this one ran at the same time)."
        run.messages.append(tool_result(call.id, call.name, text))
        return
    if isinstance(outcome, _Cut):
        run.cuts.append((index, call.name, outcome.ran))
        if info["tool_call_cut"] is None:
            info["tool_call_cut"] = call.name
        info["tool_errors"] += 1
        text = (
            f"Cut: stopped after {outcome.ran:.1f} s, when this turn's tool time budget of "
            f"{run.host.max_tool_time_s:g} s ran out; its output is lost."
        )
        run.messages.append(tool_result(call.id, call.name, text))
        return
    info["tool_errors"] += int(outcome.is_error)
    run.reward += outcome.reward or 0.0
    run.messages.append(tool_result(call.id, call.name, outcome.content))
    redirect = run.host.after_tool_call(call, outcome, info)
    if redirect is not None:
        more, more_reward, terminated, truncated, more_info = redirect
        run.messages.extend(more)
        run.reward += more_reward
        info.update(more_info)
        if terminated or truncated:
            run.ended = StepResult(*redirect)
    elif outcome.terminate:
        run.ended = StepResult([], terminated=True)


def _why_not_run(run: _TurnRun, index: int, now: float) -> str | None:
    if run.ended is not None:
        return "the episode ended at an earlier call."
    cap, budget = run.host.max_tool_calls_per_turn, run.host.max_tool_time_s
    if cap is not None and index >= cap:
        return f"only the first {cap} tool calls of a turn are run; this was call {index + 1} of {len(run.calls)}."
    if run.cuts:
        return f"this turn's tool time budget of {budget:g} s ran out at call {run.cuts[0][0] + 1}."
    if run.deadline is not None and now >= run.deadline:
        if run.used_up_at is None:
            run.used_up_at = index
        return f"this turn's tool time budget of {budget:g} s was used up by earlier calls."
    return None


def _not_run(run: _TurnRun, index: int, reason: str) -> None:
    call = run.calls[index]
    run.info["tool_calls_not_run"] += 1
    run.messages.append(tool_result(call.id, call.name, f"Not run: {reason}"))


def _notes(run: _TurnRun, call_errors: list[str]) -> list[str]:
    """What the agent is told after the tool messages: unreadable calls, the count cap, the budget."""
    notes: list[str] = []
    total, cap, budget = len(run.calls), run.host.max_tool_calls_per_turn, run.host.max_tool_time_s
    last_allowed = min(total, cap or total)
    if call_errors:
        notes.append("Some tool calls could not be read: " + "; ".join(call_errors))
    if cap is not None and total > cap:
        notes.append(
            f"This reply made {total} tool calls; at most {cap} run per turn, so "
            f"{_calls_phrase(cap + 1, total)} not run."
        )
    if run.cuts:
        later = _calls_phrase(run.cuts[-1][0] + 2, last_allowed)
        if len(run.cuts) == 1:
            index, name, ran = run.cuts[0]
            during = f"call {index + 1} (`{name}`), which was stopped after {ran:.1f} s"
        else:
            during = "calls " + ", ".join(f"{i + 1} (`{name}`)" for i, name, _ in run.cuts)
            during += ", which were stopped"
        notes.append(
            f"This turn's tool time budget of {budget:g} s ran out during {during}"
            + (f"; {later} not run." if later else ".")
        )
    if run.used_up_at is not None:
        notes.append(
            f"This turn's tool time budget of {budget:g} s was used up by the calls before call "
            f"{run.used_up_at + 1}; {_calls_phrase(run.used_up_at + 1, last_allowed)} not run."
        )
    return notes


def _calls_phrase(first: int, last: int) -> str:
    # "call 3 was" / "calls 3-1000 were": the subject of "... not run".
    if first > last:
        return ""
    return f"call {first} was" if first == last else f"calls {first}-{last} were"
