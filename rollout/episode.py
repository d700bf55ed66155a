"""run_episode: drive one env with one engine and assemble a token-exact Trajectory.

Generated ids are kept exactly as the engine returned them (stop token included) with their logprobs
and loss mask 1. Everything else (the env's user/tool messages, the template's separators and the next
generation prompt) is tokenized as the suffix the chat template adds in context (see `ChatFormat`),
with loss mask 0 and logprob 0. Nothing is ever re-tokenized from decoded text.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from envs.core.protocol import conforms, missing_members
from rollout.engine_opponent import with_policy_opponent
from rollout.failure_trace import describe_exception, record_first_failure
from rollout.opening_prompt import opening_prompt
from rollout.trajectory import Trajectory, TurnRecord
from turngym.chat.engine import Engine, chat_kwargs
from turngym.chat.format import ChatFormat
from turngym.engines.engine import EngineRequestError

_THINK = re.compile(r"<think>.*?(</think>|$)", re.DOTALL)


@dataclass
class EpisodeConfig:
    """Limits and formats for one episode.

    `max_response_tokens` is the budget for everything after the prompt (generated + env tokens), i.e.
    verl's `response_length`. `max_new_tokens` caps one turn (None: the rest of the budget).
    """

    max_turns: int = 64
    max_prompt_tokens: int | None = None
    max_response_tokens: int = 2048
    max_new_tokens: int | None = 256
    tool_call_format: str | None = None
    chat_template_kwargs: dict[str, Any] = field(default_factory=dict)
    engine_retries: int = 2
    engine_timeout: float | None = None
    retry_backoff: float = 0.5
    strip_think_from_action: bool = True


class EpisodeFailed(Exception):
    """The episode cannot go on (engine kept failing, prompt too long, env raised)."""


@dataclass
class _Tally:
    """Where one episode's wall time went (seconds per phase) and how often the engine was retried."""

    generate_s: float = 0.0
    env_s: float = 0.0
    tokenize_s: float = 0.0
    engine_retries: int = 0
    # The env's latest behaviour counts (info["behaviour"], cumulative over the episode), if it reports any.
    behaviour: dict[str, int] | None = None


@dataclass
class _Play:
    """What one episode plays with once its prompt is known; the Trajectory is what it builds."""

    env: Any
    engine: Engine
    fmt: ChatFormat
    cfg: EpisodeConfig  # already narrowed to the engine's context (see `_within_context`)
    sampling: dict[str, Any]  # the caller's sampling params, a copy: `_play` sets stop ids and max_tokens
    request_id: str
    tally: _Tally


async def run_episode(
    env: Any,
    engine: Engine,
    tokenizer: Any,
    *,
    seed: int | None = None,
    sampling_params: dict[str, Any] | None = None,
    config: EpisodeConfig | None = None,
    request_id: str | None = None,
    env_id: str | None = None,
    options: dict[str, Any] | None = None,
) -> Trajectory:
    """Play one episode of `env` with `engine`; never raises for engine/env trouble (see `failed`)."""
    cfg = config or EpisodeConfig()
    t_start = time.perf_counter()
    tally = _Tally()
    traj = Trajectory(prompt_ids=[], env_id=env_id, seed=seed)
    try:
        if not conforms(env):
            missing = ", ".join(missing_members(env))
            raise EpisodeFailed(
                f"{type(env).__name__} lacks the env contract (envs.core.protocol.EnvProtocol; missing: {missing}): "
                "make it with envs.make, or subclass envs.TextEnv"
            )
        t0 = time.perf_counter()
        # On this loop: an opponent opening the game generates while other episodes go on.
        messages, _ = await env.areset(seed=seed, options=options)
        tally.env_s += time.perf_counter() - t0
        tools = list(env.tool_schemas)
        t0 = time.perf_counter()
        # The same opening the prompt budget measured when the dataset was written (rollout/opening_prompt.py).
        opening = opening_prompt(
            tokenizer,
            messages,
            tools,
            chat_template_kwargs=cfg.chat_template_kwargs,
            tool_call_format=cfg.tool_call_format,
        )
        tally.tokenize_s += time.perf_counter() - t0
        fmt = opening.format
        # The env reads calls in reply text in the format the chat template writes (not its default).
        env.set_tool_call_format(fmt.tool_call_format)
        traj.messages, traj.tools = list(opening.messages), tools
        traj.prompt_ids = opening.prompt_ids
        if cfg.max_prompt_tokens is not None and len(traj.prompt_ids) > cfg.max_prompt_tokens:
            raise EpisodeFailed(f"prompt_too_long: {len(traj.prompt_ids)} > {cfg.max_prompt_tokens} tokens")
        play = _Play(
            env=env,
            engine=engine,
            fmt=fmt,
            cfg=_within_context(cfg, engine, len(traj.prompt_ids)),
            sampling=dict(sampling_params or {}),
            request_id=request_id or uuid.uuid4().hex,
            tally=tally,
        )
        await _play(play, traj)
    except EpisodeFailed as exc:
        traj.failed, traj.termination, traj.error = True, "failed", str(exc)
    except Exception as exc:  # env or template trouble: this episode is lost, the batch goes on
        traj.failed, traj.termination, traj.error = True, "failed", describe_exception(exc)
        record_first_failure(exc, env_id, seed)
    traj.metrics = _metrics(traj, tally, time.perf_counter() - t_start)
    return traj


def with_policy_as_opponent(
    env_kwargs: Mapping[str, Any],
    engine: Engine,
    tokenizer: Any,
    config: EpisodeConfig | None = None,
    sampling_params: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The make kwargs of an episode's env, with `opponent="self"` played by the policy behind `engine`.

    `rollout.collect` and verl's agent loop make each episode's env with these: a two-player game made
    with `opponent="self"` gets an `EngineOpponent` on the engine that plays the agent, capped per move
    as the agent is (`config.max_new_tokens`) and with a prompt budget of what the agent's whole episode
    may hold, less one move. Other kwargs come back unchanged.

    Args:
        env_kwargs: The env's make kwargs.
        engine: The engine playing the agent.
        tokenizer: Its tokenizer.
        config: The episode's limits (None: the defaults).
        sampling_params: The agent's sampling parameters.

    Returns:
        The kwargs to make the env with (a new dict).

    Example:
        >>> with_policy_as_opponent({"difficulty": "easy"}, engine=None, tokenizer=None)
        {'difficulty': 'easy'}
    """
    cfg = config or EpisodeConfig()
    per_move = cfg.max_new_tokens or EpisodeConfig.max_new_tokens
    budget = None
    if cfg.max_prompt_tokens is not None:
        budget = max(cfg.max_prompt_tokens, cfg.max_prompt_tokens + cfg.max_response_tokens - per_move)
    return with_policy_opponent(
        env_kwargs,
        engine,
        tokenizer,
        sampling_params=sampling_params,
        max_new_tokens=per_move,
        max_prompt_tokens=budget,
        chat_template_kwargs=cfg.chat_template_kwargs,
    )


async def _play(play: _Play, traj: Trajectory) -> None:
    """Alternate generation and env steps until the episode ends; `traj.termination` says how."""
    env, fmt, cfg, sampling, tally = play.env, play.fmt, play.cfg, play.sampling, play.tally
    # A seed in the episode's sampling params seeds the episode, not each turn alike: turn k samples
    # with its own seed derived from it, so a replay of the episode draws the same tokens.
    episode_seed = sampling.pop("sampling_seed", sampling.pop("seed", None))
    generations = 0
    stop_ids = set(fmt.stop_token_ids)
    sampling["stop_token_ids"] = sorted(set(sampling.get("stop_token_ids") or ()) | stop_ids)
    sampling.pop("max_new_tokens", None)
    response, mask, logprobs = traj.response_ids, traj.loss_mask, traj.logprobs
    while True:
        remaining = cfg.max_response_tokens - len(response)
        if remaining <= 0:
            traj.termination = "budget"
            return
        per_turn = remaining if cfg.max_new_tokens is None else min(cfg.max_new_tokens, remaining)
        sampling["max_tokens"] = per_turn
        if episode_seed is not None:
            sampling["sampling_seed"] = turn_sampling_seed(int(episode_seed), generations)
        generations += 1
        t0 = time.perf_counter()
        out = await _generate(play, traj.prompt_ids + response, traj.messages)
        tally.generate_s += time.perf_counter() - t0
        _copy_global_steps(out, traj.extra_fields)
        ids = [int(t) for t in out.token_ids][:per_turn]
        lps = list(out.log_probs) if getattr(out, "log_probs", None) is not None else [0.0] * len(ids)
        lps = [float(x) for x in lps[: len(ids)]]
        turn = TurnRecord(start=len(response), end=len(response) + len(ids), stop_reason=out.stop_reason)
        traj.turns.append(turn)
        response.extend(ids)
        mask.extend([1] * len(ids))
        logprobs.extend(lps)

        closed = bool(ids) and ids[-1] in stop_ids
        t0 = time.perf_counter()
        text = fmt.tokenizer.decode(ids[:-1] if closed else ids, skip_special_tokens=False)
        message, action, parse_errors = _interpret(text, fmt, bool(traj.tools), cfg.strip_think_from_action)
        tally.tokenize_s += time.perf_counter() - t0
        traj.messages.append(message)
        turn.parse_errors = parse_errors
        turn.tool_calls = len(message.get("tool_calls") or ())
        if not closed:
            if len(response) >= cfg.max_response_tokens:
                # The budget ran out mid-turn: the env never sees this half-written action.
                traj.termination = "budget"
                return
            # The per-turn cap cut the turn: close it as the template would, as a context token.
            response.append(fmt.end_of_turn_id)
            mask.append(0)
            logprobs.append(0.0)

        t0 = time.perf_counter()
        new_messages, reward, terminated, truncated, info = await env.astep(action)
        tally.env_s += time.perf_counter() - t0
        info = info or {}
        turn.reward = float(reward)
        turn.format_error = info.get("format_error")
        turn.tool_errors = int(info.get("tool_errors") or 0)
        if "success" in info:
            traj.success = bool(info["success"])
        if "behaviour" in info:
            tally.behaviour = info["behaviour"]
        traj.messages.extend(new_messages)
        if terminated or truncated:
            traj.termination = "terminated" if terminated else "truncated"
            return
        if len(traj.turns) >= cfg.max_turns:
            traj.termination = "max_turns"
            return
        t0 = time.perf_counter()
        suffix = fmt.suffix_ids(new_messages)
        tally.tokenize_s += time.perf_counter() - t0
        if len(response) + len(suffix) + 1 > cfg.max_response_tokens:
            # The env's reply plus one generated token does not fit: stop cleanly, nothing half-appended.
            traj.termination = "context_overflow"
            return
        turn.env_tokens = len(suffix)
        response.extend(suffix)
        mask.extend([0] * len(suffix))
        logprobs.extend([0.0] * len(suffix))


def context_window(engine: Engine) -> int | None:
    """The engine's context length in tokens (prompt + generated), when it says (HFEngine's `max_positions`)."""
    for name in ("max_positions", "context_length", "max_model_len"):
        value = getattr(engine, name, None)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def _within_context(cfg: EpisodeConfig, engine: Engine, prompt_tokens: int) -> EpisodeConfig:
    """`cfg` with a response budget that fits the engine's context after the prompt.

    Otherwise a long episode outgrows the context and the engine rejects the request: the episode is
    lost as failed, instead of ending as overflow with its tokens kept.
    """
    window = context_window(engine)
    if window is None:
        return cfg
    room = window - prompt_tokens
    if room <= 0:
        raise EpisodeFailed(f"prompt_too_long: {prompt_tokens} tokens >= the engine's context of {window}")
    if cfg.max_response_tokens <= room:
        return cfg
    return dataclasses.replace(cfg, max_response_tokens=room)


def _interpret(
    text: str, fmt: ChatFormat, has_tools: bool, strip_think: bool
) -> tuple[dict[str, Any], Any, int]:
    """The assistant message to record, the action for the env, and the number of unreadable calls.

    With tools, the text is parsed here once and the env gets that parse as an `AssistantTurn` (calls,
    and why any call could not be read), which it never parses again; without tools, the text.
    """
    if not has_tools:
        clean = _THINK.sub("", text).strip() if strip_think else text
        return {"role": "assistant", "content": text}, clean, 0
    from envs.core.assistant_turn import AssistantTurn
    from turngym.chat.calls import parse_tool_calls

    parsed = parse_tool_calls(text, fmt.tool_call_format)
    content = _THINK.sub("", parsed.content).strip() if strip_think else parsed.content
    turn = AssistantTurn(content, tuple(parsed.tool_calls), tuple(parsed.errors))
    if parsed.errors or not parsed.tool_calls:
        # Recorded as written: the template renders the unreadable call as the model wrote it.
        return {"role": "assistant", "content": text}, turn, len(parsed.errors)
    # A template that renders no tool calls renders only `content`: it keeps the text as written.
    written = parsed.content if fmt.tools else text
    calls = [c.to_openai() for c in parsed.tool_calls]
    return {"role": "assistant", "content": written, "tool_calls": calls}, turn, 0


def turn_sampling_seed(episode_seed: int, turn: int) -> int:
    """The sampling seed of generation `turn` (0, 1, ...) of an episode seeded with `episode_seed`."""
    return (episode_seed * 1_000_003 + turn * 7_919 + 1) % 2**31


async def _generate(play: _Play, prompt_ids: list[int], messages: list[dict[str, Any]] | None = None) -> Any:
    """The engine's output for `prompt_ids` (rendered from `messages`), retrying transient failures as
    `play.cfg` allows; an engine behind a chat API gets the messages too."""
    cfg = play.cfg
    chat = chat_kwargs(play.engine, messages or [], play.fmt.tools)
    last: Exception | None = None
    for attempt in range(cfg.engine_retries + 1):
        try:
            call = play.engine.generate(
                play.request_id, prompt_ids=prompt_ids, sampling_params=dict(play.sampling), **chat
            )
            if cfg.engine_timeout is not None:
                return await asyncio.wait_for(call, cfg.engine_timeout)
            return await call
        except EngineRequestError as exc:
            raise EpisodeFailed(f"engine rejected the request: {exc}") from exc
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            last = exc
            if attempt < cfg.engine_retries:
                play.tally.engine_retries += 1
                await asyncio.sleep(cfg.retry_backoff * 2**attempt)
    kind = "timeout" if isinstance(last, TimeoutError) else type(last).__name__
    raise EpisodeFailed(f"engine_error ({kind}) after {cfg.engine_retries + 1} attempts: {last}")


def _copy_global_steps(out: Any, extra: dict[str, Any]) -> None:
    """Keep min/max weight versions seen across turns (verl's trainer needs both)."""
    fields = getattr(out, "extra_fields", None) or {}
    lo, hi = (
        fields.get("min_global_steps", fields.get("global_steps")),
        fields.get("max_global_steps", fields.get("global_steps")),
    )
    if lo is not None and extra.get("min_global_steps") is None:
        extra["min_global_steps"] = lo
    if hi is not None:
        extra["max_global_steps"] = hi


def _metrics(traj: Trajectory, tally: _Tally, wall: float) -> dict[str, Any]:
    """The episode's summary numbers, as `Trajectory.metrics` carries them."""
    turns = traj.turns
    return {
        "total_reward": traj.total_reward,
        "num_turns": len(turns),
        "tool_calls": sum(t.tool_calls for t in turns),
        "tool_errors": sum(t.tool_errors for t in turns),
        "parse_errors": sum(t.parse_errors for t in turns),
        "format_errors": sum(t.format_error is not None for t in turns),
        "turns_cut": sum(t.stop_reason != "completed" for t in turns),
        "generated_tokens": sum(traj.loss_mask),
        "env_tokens": len(traj.response_ids) - sum(traj.loss_mask),
        "prompt_tokens": len(traj.prompt_ids),
        "termination": traj.termination,
        "success": traj.success,
        "failed": traj.failed,
        "overflow": traj.termination in ("context_overflow", "budget"),
        "engine_retries": tally.engine_retries,
        "wall_s": wall,
        "generate_s": tally.generate_s,
        "env_s": tally.env_s,
        "tokenize_s": tally.tokenize_s,
        "behaviour": tally.behaviour,
    }
