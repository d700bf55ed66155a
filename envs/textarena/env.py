"""TextArenaEnv: one of TextArena's raw game envs as a turngym TextEnv (chat messages in, rewards out)."""

from __future__ import annotations

import contextlib
import importlib
import io
import re
from collections.abc import Generator
from typing import Any

from envs.core.assistant_turn import AssistantTurn
from envs.core.number_bounds import check_env_numbers
from envs.core.step_result import StepResult
from envs.core.text_env import TextEnv
from envs.textarena.action_formats import action_format
from envs.textarena.catalog import Game, game
from envs.textarena.episode_random import EpisodeRandom
from envs.textarena.exclusions import NO_RANDOM_OPENING
from envs.textarena.legal_moves import legal_moves
from envs.textarena.opponent import POLICY_OPPONENT, Opponent, resolve_opponent
from envs.textarena.tactics import tactical_moves
from turngym.chat.message import Message, system, user

# TextArena ends a game when a player makes one more refused move in a row than `error_allowance`. The
# agent plays under the game's own allowance; a reply with nothing the game could read runs under this one
# (it is a format error and does not count), and so do the opponent's tries (bounded by opponent_attempts).
_UNLIMITED = 1 << 30
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
# A reply the game can read holds a bracketed token: every adapted game reads its move from one.
_BRACKETED = re.compile(r"\[[^\[\]]*\S[^\[\]]*\]")
# Moves an opponent may try in one turn before the episode is cut as `opponent_stuck`: the random
# opponent needs many tries in games whose moves it can only guess (see docs/envs.md, Opponents).
OPPONENT_ATTEMPTS = 200
# Opponent calls that may raise in a row (an LLM opponent whose engine is down) before the episode is cut:
# a broken opponent should end the episode at once, not after OPPONENT_ATTEMPTS slow failures.
OPPONENT_ERRORS = 3
# TextArena message types (ObservationType names) the agent is not shown again: its own moves.
_PLAYER_ACTION = "PLAYER_ACTION"


class TextArenaEnv(TextEnv):
    """A TextArena 0.7.4 game played through its raw env (no TextArena wrapper: they keep history).

    `reset` returns a system message (the game and its action format) and the game's opening as a user
    message; each `step` passes the reply to the game and returns what the game said since, as one user
    message. In two-player games the agent is player `seat` (0, TextArena's first player, by default) and
    `opponent` plays the other: "random" (a seeded random move among those the game shows), "self" (the
    policy being trained: `rollout.collect` and verl's agent loop make the env with an `EngineOpponent` on
    their own engine in its place) or a callable taking the opponent's chat messages and returning its
    move (e.g. a model behind a rollout engine).
    The opponent may try `opponent_attempts` moves per turn; when it finds no valid one, or raises
    `OPPONENT_ERRORS` times in a row, the episode ends truncated with `info["opponent_stuck"]` (and
    `info["opponent_error"]` when it raised). The reward is TextArena's own, paid on the step that ends
    the game. A move the game refuses keeps the meaning TextArena gives it (`Game.invalid_move`): it is
    refused and may be retried `error_allowance` times in a row, after which the next one ends the game as
    TextArena scores it (the mover loses), or, in games marked "ends_game" (a mine in Minesweeper), it
    ends the game at once. Only a reply the game cannot read at all (no bracketed move, where the game
    wants one) is a format error that does not count. The random opponent reads the game's messages only
    (never the agent's replies) and, where the game's state lists them, plays among the legal moves; its
    refused tries never forfeit the game. The seed fixes the
    episode: TextArena's `random` (and, where a game uses it, global `numpy.random`) draws run on an
    episode-owned generator (`EpisodeRandom`), the opponent draws from the env's.
    """

    reset_options: dict[str, Any] = {}
    client_kwargs = ("seat",)  # the opponent (an engine, a callable) and its budget are the operator's

    def __init__(
        self,
        *,
        game_id: str,
        opponent: str | Opponent = "random",
        seat: int = 0,
        opponent_attempts: int = OPPONENT_ATTEMPTS,
        tools=None,
        render_mode: str | None = None,
    ):
        super().__init__(tools=tools, render_mode=render_mode)
        self.game: Game = game(game_id)
        if self.game.players not in (1, 2):
            raise ValueError(
                f"TextArena {game_id!r} needs {self.game.players} players; only 1 or 2 are adapted"
            )
        if seat not in range(self.game.players) or isinstance(seat, bool):
            raise ValueError(
                f"seat must be one of {list(range(self.game.players))} for {game_id!r}, got {seat!r}"
            )
        self.seat = seat
        if seat != 0 and opponent == "random" and game_id in NO_RANDOM_OPENING:
            raise ValueError(
                f"in TextArena {game_id!r} the random opponent finds no opening move; "
                "play seat=0 or pass a callable opponent"
            )
        if not (callable(opponent) or opponent in ("random", POLICY_OPPONENT)):
            resolve_opponent(opponent, None)  # raises the error naming the valid choices
        if opponent == POLICY_OPPONENT and self.game.players != 2:
            raise ValueError(f"opponent='self' needs a two-player game; {game_id!r} has one player")
        self.opponent = opponent
        if (
            isinstance(opponent_attempts, bool)
            or not isinstance(opponent_attempts, int)
            or opponent_attempts < 1
        ):
            raise ValueError(f"opponent_attempts must be a whole number >= 1, got {opponent_attempts!r}")
        check_env_numbers(type(self).__name__, seat=seat, opponent_attempts=opponent_attempts)
        self.opponent_attempts = opponent_attempts
        self.action_help = f"Reply with one move: {action_format(self.game.name)}"
        self._ta: Any = None
        self._random: EpisodeRandom | None = None
        self._opponent: Opponent | None = None
        self._opponent_messages: list[Message] = []
        self._ended_before_start: StepResult | None = None

    # ----- episode ---------------------------------------------------------------------------------
    async def _reset(self, options: dict[str, Any]):
        # An opponent opening the game with an async `amove` (EngineOpponent) is awaited on the caller's
        # loop: other episodes go on while it generates.
        return await self._drive(self._open(options))

    def _open(self, options: dict[str, Any]) -> Generator[list[Message], str | Exception, tuple[list, dict]]:
        """Start the game, the opponent's opening moves included; yields as `_play` does (see `_drive`)."""
        ta_seed = int(self.np_random.integers(0, 2**31 - 1))
        self._random = EpisodeRandom(ta_seed, numpy_global=self.game.numpy_global)
        env_class = _load(self.game.entry_point)
        with self._random, _quiet():
            self._ta = env_class(**self.game.kwargs)
            self._ta.reset(num_players=self.game.players, seed=ta_seed)
            if self.game.invalid_move == "ends_game":
                self._ta.state.error_allowance = 0
        ended: StepResult | None = None
        if self.game.players == 2:
            self._opponent = resolve_opponent(
                self.opponent,
                self.np_random,
                lambda: legal_moves(self.game.name, self._ta),
                lambda: tactical_moves(self.game.name, self._ta),
            )
            self._opponent_messages = [system(self._system_prompt())]
            ended = yield from self._opponent_turns()
        opening = self._agent_view()
        if ended is not None:  # the game's opening and why it stopped (shown again by the first step)
            opening = str(ended.messages[-1]["content"])
        messages = [system(self._system_prompt()), user(opening or "(The game has started.)")]
        info = {"textarena_id": self.game.ta_id, "players": self.game.players, "seat": self.seat}
        # The opponent, moving first, found no valid move: the first step ends the episode (reset cannot).
        self._ended_before_start = ended
        return messages, info

    def _system_prompt(self) -> str:
        return (
            f"You are playing {self.game.name} (TextArena {self.game.ta_id}). "
            f"Each reply is one move. Action format: {action_format(self.game.name)}"
        )

    async def _respond(self, turn: AssistantTurn) -> StepResult:
        # An opponent with an async `amove` (EngineOpponent) is awaited: other episodes on the event loop
        # go on while it generates, and no lock is held meanwhile.
        return await self._drive(self._play(turn))

    def _play(self, turn: AssistantTurn) -> Generator[list[Message], str | Exception, StepResult]:
        """One step: the reply to the game, then the opponent's turns. Yields the opponent's messages each
        time it must move and is sent its move, or the exception asking for it raised (see `_drive`)."""
        if self._ended_before_start is not None:
            return self._ended_before_start
        text = turn.content
        if not text.strip():
            return self._format_error("the reply is empty")
        state = self._ta.state
        readable = _BRACKETED.search(text) is not None
        errors_before = getattr(state, "error_count", 0)
        with self._random, _quiet(), _allowance(state, None if readable else _UNLIMITED):
            try:
                done, _ = self._ta.step(text)
            except Exception as e:  # a game that cannot read a reply must not end the run
                self._agent_view()  # drop what the game recorded of the unusable move
                return self._format_error(
                    f"the game could not process this reply ({type(e).__name__}: {str(e)[:200]})"
                )
        if (
            not done
            and state.current_player_id == self.seat
            and getattr(state, "error_count", 0) > errors_before
        ):
            said = self._agent_view()
            if not readable:  # nothing the game could read: a format error, not one of the game's refusals
                state.error_count = errors_before
                return self._format_error(f"no move found ({_reason(said)})")
            left = state.error_allowance - state.error_count
            note = f"The game refused this move; {left} more refused move(s) in a row and the next one loses."
            result = StepResult([user(f"{said or 'That move is not valid here.'}\n\n{note}")])
            result.info["invalid_move"] = _reason(said)
            return result
        if not done and self.game.players == 2:
            stuck = yield from self._opponent_turns()
            if stuck is not None:
                return stuck
            done = state.done
        said = self._agent_view()
        if not done:
            return StepResult([user(said or "(Your move.)")])
        with self._random, _quiet():
            return self._game_over(said)

    def _game_over(self, said: str) -> StepResult:
        rewards, game_info = self._ta.close()
        reward = (rewards or {}).get(self.seat, 0.0)
        reason = (game_info or {}).get(self.seat, {}).get("reason", "") or ""
        if isinstance(reward, str):
            # Countdown, Cryptarithm, Slitherlink and ThreeCardMonte call set_invalid_move(progress, reason):
            # the arguments arrive swapped, the progress inside the reason ("Invalid Move: 0.25").
            progress = _NUMBER.search(str(reason))
            reward, reason = (float(progress.group()) if progress else -1.0), f"Invalid Move: {reward}"
        reward, reason = float(reward), str(reason)
        text = "\n\n".join(
            p for p in (said, f"Game over. {reason}".strip(), f"Your reward: {reward:g}.") if p
        )
        return StepResult(
            [user(text)],
            reward,
            terminated=True,
            info={"success": reward >= 1.0, "textarena_reason": reason},
        )

    # ----- the other player --------------------------------------------------------------------------
    async def _drive(self, play: Generator[list[Message], str | Exception, StepResult | None]) -> Any:
        """Run `play` to its end, asking the opponent for each move it asks for (awaiting its `amove`
        when it has one: other episodes on the event loop go on while it generates)."""
        try:
            request = next(play)
            amove = getattr(self._opponent, "amove", None)  # after `next`: `_open` chooses the opponent
            while True:
                if amove is None:
                    move = self._ask_opponent(request)
                else:
                    try:
                        move = await amove(request)
                    except Exception as e:  # counted by `_opponent_turns`, as in `_ask_opponent`
                        move = e
                request = play.send(move)
        except StopIteration as finished:
            return finished.value

    def _ask_opponent(self, messages: list[Message]) -> str | Exception:
        try:
            return self._opponent(messages)
        except Exception as e:  # an opponent that cannot move (engine down) must not crash the run
            return e

    def _opponent_turns(self) -> Generator[list[Message], str | Exception, StepResult | None]:
        """Let the opponent move until it is the agent's turn or the game is over; None unless it got stuck.

        A generator: it yields the opponent's messages for each move and is sent the move (or the
        exception the opponent raised), so one game logic serves `step` and `astep`. TextArena runs under
        the episode's random state only between yields, never while the opponent thinks.
        """
        state = self._ta.state
        while not state.done and state.current_player_id != self.seat:
            start = len(self._opponent_messages)
            errors = 0
            for _ in range(self.opponent_attempts):
                if self._opponent_messages[-1]["role"] != "user":  # after an error it is asked the same again
                    self._opponent_messages.append(
                        user(self._opponent_view(state.current_player_id) or "(Your move.)")
                    )
                move = yield list(self._opponent_messages)
                if isinstance(move, Exception):
                    errors += 1
                    if errors >= OPPONENT_ERRORS:
                        return self._opponent_failed(f"{type(move).__name__}: {str(move)[:200]}", errors)
                    continue
                errors = 0
                self._opponent_messages.append({"role": "assistant", "content": str(move)})
                mover = state.current_player_id
                shown = len(state.observations[self.seat])
                try:
                    with self._random, _quiet(), _allowance(state, _UNLIMITED):
                        self._ta.step(str(move))
                except Exception:
                    del state.observations[self.seat][shown:]
                    continue
                if state.done or state.current_player_id != mover or getattr(state, "error_count", 0) == 0:
                    break
                del state.observations[self.seat][
                    shown:
                ]  # the agent does not see the opponent's refused tries
            else:
                said = self._agent_view()
                note = f"The opponent found no valid move in {self.opponent_attempts} tries; the game stops here."
                return StepResult(
                    [user(f"{said}\n\n{note}".strip())], truncated=True, info={"opponent_stuck": True}
                )
            # A finished turn is kept as what the opponent was shown first and the move the game took.
            del self._opponent_messages[start + 1 : -1]
        return None

    def _opponent_failed(self, error: str, tries: int) -> StepResult:
        """The episode cut because the opponent raised `tries` times in a row (e.g. its engine is down)."""
        said = self._agent_view()
        note = f"The opponent could not move ({error}; {tries} tries); the game stops here."
        return StepResult(
            [user(f"{said}\n\n{note}".strip())],
            truncated=True,
            info={"opponent_stuck": True, "opponent_error": error},
        )

    # ----- observations ------------------------------------------------------------------------------
    def _agent_view(self) -> str:
        return self._view(self.seat)

    def _opponent_view(self, player: int) -> str:
        """What the opponent is shown: a scripted opponent (`reads_game_text_only`) gets the game's messages
        without the agent's replies, so nothing the agent writes can become one of its candidate moves."""
        game_only = getattr(self._opponent, "reads_game_text_only", False)
        return self._view(player, hide=self.seat if game_only else None)

    def _view(self, player: int, hide: int | None = None) -> str:
        """What the game told `player` since it last looked, as text (its own moves, and those of player
        `hide`, left out)."""
        state = self._ta.state
        pending = state.observations.get(player, [])
        state.observations[player] = []
        parts = []
        for sender, message, kind in pending:
            if getattr(kind, "name", "") == _PLAYER_ACTION:
                if sender in (player, hide):
                    continue
                label = "Opponent" if sender != -1 else "Game"
                parts.append(f"[{label}] {message}")
            else:
                parts.append(str(message))
        return "\n\n".join(p.strip() for p in parts if p.strip())


def _reason(said: str) -> str:
    marker = "Reason:"
    if marker in said:
        return said.split(marker, 1)[1].split("\n", 1)[0].strip()[:200]
    return said.strip().split("\n", 1)[0][:200] or "the game refused it"


@contextlib.contextmanager
def _allowance(state: Any, allowance: int | None) -> Generator[None, None, None]:
    """Run a step with TextArena's error allowance set to `allowance` (None: the game's own), then restore it."""
    own = getattr(state, "error_allowance", None)
    if allowance is not None and own is not None:
        state.error_allowance = allowance
    try:
        yield
    finally:
        if allowance is not None and own is not None:
            state.error_allowance = own


def _quiet() -> contextlib.AbstractContextManager:
    # Some games print their generator's progress ("Generated puzzle in 2 attempts") to stdout.
    return contextlib.redirect_stdout(io.StringIO())


_CLASSES: dict[str, Any] = {}


def _load(entry_point: str) -> Any:
    cls = _CLASSES.get(entry_point)
    if cls is None:
        module, _, attr = entry_point.partition(":")
        cls = _CLASSES[entry_point] = getattr(importlib.import_module(module), attr)
    return cls
