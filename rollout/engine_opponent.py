"""EngineOpponent: the other player of a two-player TextArena game, played by a model through any engine."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from envs.textarena.opponent import POLICY_OPPONENT
from interactions.model_participant import ModelParticipant, describe_error
from turngym.chat.engine import Engine
from turngym.chat.format import TemplateError
from turngym.common.run_sync import run_sync

__all__ = ["EngineOpponent", "OpponentEngineError", "describe_error", "with_policy_opponent"]


class OpponentEngineError(RuntimeError):
    """The engine behind an `EngineOpponent` failed to produce a move."""


class EngineOpponent(ModelParticipant):
    """A callable opponent (`envs.make("textarena/TicTacToe-v0", opponent=EngineOpponent(engine, tokenizer))`).

    A `ModelParticipant` (`interactions.model_participant`) that sees the game from its seat: each move
    renders the opponent's chat messages with the tokenizer's chat template, every content as plain text
    (the agent's moves reach this prompt: they must not become role markup), asks `engine` for at most
    `max_new_tokens` tokens with `sampling_params`, and returns the decoded text. The env calls opponents
    synchronously, also from `astep` inside `rollout.collect`, so `__call__` runs the request through
    `run_sync` (a worker thread with its own loop when one is running); the env awaits `amove` when it can.

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
        super().__init__(
            engine,
            tokenizer,
            name="EngineOpponent",
            request_prefix="opponent",
            sampling_params=sampling_params,
            max_new_tokens=max_new_tokens,
            seed=seed,
            chat_template_kwargs=chat_template_kwargs,
            max_prompt_tokens=max_prompt_tokens,
            on_engine_error="the env asks again and ends the episode after a few failures in a row",
            on_empty_reply="the move counts as invalid and is asked again",
        )

    @property
    def moves(self) -> int:
        """Moves asked for so far (failed ones included)."""
        return self.requests

    def __call__(self, messages: Sequence[dict[str, Any]]) -> str:
        """The opponent's move for `messages` (empty when the engine wrote nothing); raises when it failed."""
        return run_sync(self.amove(messages))

    async def amove(self, messages: Sequence[dict[str, Any]]) -> str:
        """Async `__call__`."""
        try:
            return (await self.reply(messages)).text
        except (
            TemplateError
        ):  # this prompt cannot be rendered: not the engine's failure, asking again won't help
            raise
        except Exception as e:  # the env counts these and ends the episode after a few in a row
            raise OpponentEngineError(f"the opponent's engine failed ({describe_error(e)})") from e


# Sampling keys the opponent sets itself: its per-move cap and its own chat template's stop ids.
_OWN_SAMPLING_KEYS = ("max_tokens", "max_new_tokens", "stop_token_ids")


def with_policy_opponent(
    env_kwargs: Mapping[str, Any],
    engine: Engine,
    tokenizer: Any,
    *,
    sampling_params: Mapping[str, Any] | None = None,
    max_new_tokens: int = 256,
    max_prompt_tokens: int | None = None,
    chat_template_kwargs: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """`env_kwargs` with `opponent="self"` replaced by an EngineOpponent on `engine`: the policy plays both seats.

    The opponent comes in through the env's make kwargs, as any other opponent does: the rollout calls
    this wherever it makes an env for an episode (`collect`, verl's agent loop). Kwargs without
    `opponent="self"` come back unchanged (as a new dict). The opponent samples as the agent does
    (`sampling_params`, less the per-move cap and stop ids it sets itself), with its own per-move cap,
    and its prompt is kept within `max_prompt_tokens`.

    Args:
        env_kwargs: The env's make kwargs.
        engine: The engine playing the agent.
        tokenizer: Its tokenizer (the opponent renders with the same chat template).
        sampling_params: The agent's sampling parameters.
        max_new_tokens: The opponent's cap per move.
        max_prompt_tokens: The opponent's prompt budget (None: none).
        chat_template_kwargs: Passed to the chat template.

    Returns:
        The kwargs to make the env with.

    Example:
        >>> with_policy_opponent({"seat": 1}, engine=None, tokenizer=None)
        {'seat': 1}
    """
    kwargs = dict(env_kwargs)
    if kwargs.get("opponent") != POLICY_OPPONENT:
        return kwargs
    params = {k: v for k, v in (sampling_params or {}).items() if k not in _OWN_SAMPLING_KEYS}
    kwargs["opponent"] = EngineOpponent(
        engine,
        tokenizer,
        sampling_params=params,
        max_new_tokens=max_new_tokens,
        chat_template_kwargs=chat_template_kwargs,
        max_prompt_tokens=max_prompt_tokens,
    )
    return kwargs
