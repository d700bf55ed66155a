"""Opponents for two-player TextArena games: a seeded random mover by default, or any callable (e.g. an LLM).

The random opponent is a scripted player: its moves come from the game's state and the game's own text,
never from what the agent wrote (the env gives it only the game's messages; see `TextArenaEnv`). Were it
to draw from the agent's reply, the agent could write decoys in brackets and choose the opponent's moves.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

# A bracketed move as TextArena games write them in prompts and move lists: `[4]`, `[e2e4]`, `[Bid 10]`.
_BRACKETED = re.compile(r"\[([^\[\]\n]{1,40})\]")
# Tags TextArena puts in brackets that are never moves.
_NOT_MOVES = re.compile(r"^(GAME|Player \d+|Opponent|You|Moderator)$", re.IGNORECASE)

#: An opponent sees the chat messages of its side of the game (system prompt, then what the game told it)
#: and returns its move as text. Invalid moves are answered by the game and the opponent is asked again.
Opponent = Callable[[Sequence[dict[str, Any]]], str]


class RandomOpponent:
    """Plays a random legal move, from the env's seeded generator.

    Where the env can read the legal moves from the game's state (`legal_moves`), it plays uniformly among
    them; where the game also has one-ply tactics (`tactics`: TicTacToe, ConnectFour, SimpleTak), it plays
    among the moves they pick first (a move that wins at once, else one that blocks the agent's). Elsewhere it reads the game's text, which the env gives it without the agent's replies: TextArena
    games list moves in brackets (`Available Moves: '[0]', '[4]'`) or show the format by example
    (`[col 4]`, `[attack 0 1]`). Candidates come from the latest message first, then from everything seen,
    with the numbers of an example (drawn from those on the board) and its squares varied (`[col 4]` ->
    `[col 2]`, `[a2a3]` -> `[c7c6]`); moves the game just refused are not
    tried again.
    """

    #: Tells the env to show this opponent the game's messages only, never the agent's replies.
    reads_game_text_only = True

    def __init__(
        self,
        rng: np.random.Generator,
        legal_moves: Callable[[], list[str] | None] | None = None,
        tactics: Callable[[], list[str] | None] | None = None,
    ):
        self.rng = rng
        self.legal_moves = legal_moves
        self.tactics = tactics

    def __call__(self, messages: Sequence[dict[str, Any]]) -> str:
        """A move for the opponent's current turn."""
        legal = self.tactics() if self.tactics is not None else None
        if not legal and self.legal_moves is not None:
            legal = self.legal_moves()
        if legal:
            return legal[int(self.rng.integers(len(legal)))]
        refused = _just_refused(messages)
        latest = [c for c in _candidates(messages[-1]["content"]) if c not in refused] if messages else []
        if latest and self.rng.random() < 0.8:
            return latest[int(self.rng.integers(len(latest)))]
        seen = {c: None for m in messages if m["role"] != "assistant" for c in _candidates(m["content"])}
        pool = [c for c in seen if c not in refused]
        if pool and self.rng.random() < 0.5:
            return pool[int(self.rng.integers(len(pool)))]
        templates = [c for c in seen if _NUMBER.search(c)] or ["[0]"]
        return self._vary(templates[int(self.rng.integers(len(templates)))], messages[-1]["content"])

    def _vary(self, template: str, latest: str) -> str:
        """`template` with its numbers (and the file letters of board squares) drawn afresh."""
        # The numbers and the column letters on the board are the likely coordinates and counts: half the
        # numbers are drawn from those, half from 0-9.
        shown = sorted({int(n) for n in _NUMBER.findall(latest) if len(n) < 4}) or list(range(10))
        files = "".join(sorted(set(_FILE_LABEL.findall(latest)))) or "abcdefgh"
        files = files if len(files) > 1 else "abcdefgh"

        def letter(match: re.Match) -> str:
            drawn = files[int(self.rng.integers(len(files)))]
            return drawn.upper() if match.group().isupper() else drawn

        varied = _SQUARE_FILE.sub(letter, template)

        def number(_: re.Match) -> str:
            pool = shown if self.rng.random() < 0.5 else _DIGITS
            return str(pool[int(self.rng.integers(len(pool)))])

        return _NUMBER.sub(number, varied)


# The file letter of a board square (`a2`, `C1`), not a letter inside a word.
_SQUARE_FILE = re.compile(r"(?<![A-Za-z])[A-Za-z](?=\d)")
_NUMBER = re.compile(r"\d+")
_DIGITS = list(range(10))
# A column label of a drawn board: a lone lowercase letter a-h between spaces (`     a b c d e f`).
_FILE_LABEL = re.compile(r"(?<=[ \t])[a-h](?=[ \t]|$)", re.MULTILINE)


def _just_refused(messages: Sequence[dict[str, Any]]) -> set[str]:
    """Moves of the current turn the game refused: assistant moves each answered by an 'invalid' message."""
    refused: set[str] = set()
    i = len(messages) - 1
    while i >= 1 and messages[i]["role"] == "user" and messages[i - 1]["role"] == "assistant":
        if "invalid" not in messages[i]["content"].lower():
            break
        refused.add(messages[i - 1]["content"])
        i -= 2
    return refused


def _candidates(text: str) -> list[str]:
    seen: dict[str, None] = {}
    for inner in _BRACKETED.findall(text):
        if inner.strip() and not _NOT_MOVES.match(inner.strip()):
            seen.setdefault(f"[{inner}]", None)
    return list(seen)


#: `opponent="self"`: the policy being trained plays the other seat. Plain data, so training configs and
#: dataset rows can name it; the rollout making the episode's env (`rollout.collect`, verl's agent loop)
#: puts an `EngineOpponent` on its own engine in its place (`rollout.episode.with_policy_as_opponent`).
POLICY_OPPONENT = "self"


class UnattachedPolicyOpponent:
    """Stands in for `opponent="self"` in an env no rollout made: asked to move, it raises."""

    def __call__(self, messages: Sequence[dict[str, Any]]) -> str:
        """Raise: there is no policy to ask (the env ends the episode after a few such errors)."""
        raise RuntimeError(
            "opponent='self' is the policy being trained, put in place when rollout.collect or the training "
            "agent loop makes the env; elsewhere pass opponent=<callable> (e.g. rollout.EngineOpponent)"
        )


def resolve_opponent(
    opponent: str | Opponent,
    rng: np.random.Generator,
    legal_moves: Callable[[], list[str] | None] | None = None,
    tactics: Callable[[], list[str] | None] | None = None,
) -> Opponent:
    """The opponent named by `opponent` ("random", "self") or the callable itself.

    Args:
        opponent: "random", "self" or a callable taking the opponent's messages and returning its move.
        rng: the env's generator, which the random opponent draws from.
        legal_moves: for the random opponent, reads the legal moves from the game's state (None where the
            game's state is not read: it then draws from the game's text).
        tactics: for the random opponent, the moves one-ply tactics pick (None: none forced).

    Returns:
        The callable that plays the opponent's moves.
    """
    if callable(opponent):
        return opponent
    if opponent == "random":
        return RandomOpponent(rng, legal_moves, tactics)
    if opponent == POLICY_OPPONENT:
        return UnattachedPolicyOpponent()
    raise ValueError(
        f"opponent must be 'random', 'self' (the policy being trained, played by the rollout's engine) or a "
        f"callable taking the opponent's messages and returning its move, got {opponent!r}"
    )
