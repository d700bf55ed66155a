"""EngineOpponent: the other player of a two-player TextArena game, played by a model through any engine."""

from __future__ import annotations

import itertools
import sys
import zlib
from collections.abc import Sequence
from typing import Any

from chat.engine import Engine, chat_kwargs
from chat.format import ChatFormat
from common.run_sync import run_sync
from envs.protocol import EnvProtocol

_request_ids = itertools.count()


class OpponentEngineError(RuntimeError):
    """The engine behind an `EngineOpponent` failed to produce a move."""


class EngineOpponent:
    """A callable opponent (`envs.make("textarena/TicTacToe-v0", opponent=EngineOpponent(engine, tokenizer))`).

    Each move renders the opponent's chat messages with the tokenizer's chat template (rollout's
    `ChatFormat`), tokenizes every message content as plain text (the agent's moves reach this prompt: they
    must not become role markup), asks `engine` for at most `max_new_tokens` tokens with `sampling_params`, and returns the
    decoded text. The env calls opponents synchronously, also from `astep` inside `rollout.collect`, so the
    request runs through `run_sync` (a worker thread with its own loop when one is running), as `LLMUser`.

    With `seed` set, each move's sampling seed is derived from `seed` and the rendered prompt, so the same
    position gets the same move however episodes interleave. An engine error is raised on (as
    `OpponentEngineError`): the env asks again and, after `OPPONENT_ERRORS` (3) errors in a row, ends the
    episode truncated with `info["opponent_stuck"]` and `info["opponent_error"]`, so a dead engine costs
    three requests, not a turn's worth of tries. An empty reply is an empty move, which the game refuses
    and asks again like any invalid move. `failures` counts both; the first is reported on stderr.

    With `max_prompt_tokens`, the oldest exchanges (after the system message) are left out of a prompt
    that would be longer, so a game that keeps refusing a weak opponent's moves cannot grow its prompt past
    the engine's context (each refused try adds the move and the game's answer).
    """

    def __init__(
        self,
        engine: Engine,
        tokenizer: Any,
        *,
        sampling_params: dict[str, Any] | None = None,
        max_new_tokens: int = 32,
        seed: int | None = None,
        chat_template_kwargs: dict[str, Any] | None = None,
        max_prompt_tokens: int | None = None,
    ):
        if not callable(getattr(engine, "generate", None)):
            raise TypeError(f"engine must have an async `generate` method, got {type(engine).__name__}")
        self.engine = engine
        self.tokenizer = tokenizer
        self.format = ChatFormat(tokenizer, chat_template_kwargs=chat_template_kwargs)
        self.sampling_params = {
            "temperature": 1.0,
            "stop_token_ids": list(self.format.stop_token_ids),
            **(sampling_params or {}),
            "max_new_tokens": max_new_tokens,
        }
        self.seed = seed
        self.max_prompt_tokens = max_prompt_tokens
        self.moves = 0
        self.failures = 0
        self.generated_tokens = 0

    def __call__(self, messages: Sequence[dict[str, Any]]) -> str:
        """The opponent's move for `messages` (empty when the engine wrote nothing); raises when it failed."""
        return run_sync(self.amove(messages))

    async def amove(self, messages: Sequence[dict[str, Any]]) -> str:
        """Async `__call__`."""
        self.moves += 1
        sent = list(messages)  # `_prompt` drops the oldest exchanges from it in place
        text, prompt_ids = self._prompt(sent)
        params = dict(self.sampling_params)
        if self.seed is not None:
            params["seed"] = zlib.crc32(f"{self.seed}:{text}".encode()) & 0x7FFFFFFF
        try:
            out = await self.engine.generate(
                f"opponent-{next(_request_ids)}",
                prompt_ids=prompt_ids,
                sampling_params=params,
                **chat_kwargs(self.engine, sent),
            )
        except Exception as e:  # the env counts these and ends the episode after a few in a row
            why = describe_error(e)
            self._failed(why, "the env asks again and ends the episode after a few failures in a row")
            raise OpponentEngineError(f"the opponent's engine failed ({why})") from e
        token_ids = list(getattr(out, "token_ids", None) or [])
        self.generated_tokens += len(token_ids)
        move = self.tokenizer.decode(token_ids, skip_special_tokens=True).strip()
        if not move:
            self._failed(
                "the engine returned an empty reply", "the move counts as invalid and is asked again"
            )
        return move

    def _prompt(self, messages: list[dict[str, Any]]) -> tuple[str, list[int]]:
        """The rendered prompt and its ids, the oldest exchanges dropped until it fits `max_prompt_tokens`."""
        while True:
            # Every message is text (the game's and the agent's): only the template's markup is special.
            chat = self.format.chat
            escaped = chat.render_escaped(
                messages, add_generation_prompt=True, template_kwargs=self.format.kwargs
            )
            ids, text = chat.encode_rendered(escaped), chat.restore(escaped)
            if self.max_prompt_tokens is None or len(ids) <= self.max_prompt_tokens:
                return text, ids
            first = 1 if messages and messages[0]["role"] == "system" else 0
            if len(messages) - first < 3:  # only the latest question is left: send it as it is
                return text, ids
            del messages[first : first + 2]  # an exchange: what the game said and the move

    def _failed(self, why: str, what_next: str) -> None:
        self.failures += 1
        if self.failures == 1:
            print(
                f"turngym: EngineOpponent: {why}; {what_next} (check the engine; see `.failures`)",
                file=sys.stderr,
            )


def describe_error(error: BaseException) -> str:
    """`Type: message` of an engine error in one line; a Ray task error is described by its cause."""
    cause = getattr(error, "cause", None)  # Ray's RayTaskError carries the remote exception here
    if isinstance(cause, BaseException):
        error = cause
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return f"{type(error).__name__}: {(lines[-1] if lines else '')[:200]}"


# Sampling keys the opponent sets itself: its per-move cap and its own chat template's stop ids.
_OWN_SAMPLING_KEYS = ("max_tokens", "max_new_tokens", "stop_token_ids")


def attach_policy_opponent(
    env: EnvProtocol,
    engine: Engine,
    tokenizer: Any,
    *,
    sampling_params: dict[str, Any] | None = None,
    max_new_tokens: int = 256,
    max_prompt_tokens: int | None = None,
    chat_template_kwargs: dict[str, Any] | None = None,
) -> EngineOpponent | None:
    """Give an env made with `opponent="self"` an EngineOpponent on `engine`: the policy plays both seats.

    Envs that do not ask for it (`wants_policy_opponent`) are left alone and None is returned. The
    opponent samples as the agent does (`sampling_params`), with its own per-move cap, and its prompt is
    kept within `max_prompt_tokens`.
    """
    if not env.wants_policy_opponent:
        return None
    params = {k: v for k, v in (sampling_params or {}).items() if k not in _OWN_SAMPLING_KEYS}
    opponent = EngineOpponent(
        engine,
        tokenizer,
        sampling_params=params,
        max_new_tokens=max_new_tokens,
        chat_template_kwargs=chat_template_kwargs,
        max_prompt_tokens=max_prompt_tokens,
    )
    env.attach_policy_opponent(opponent)
    return opponent
