"""Legal moves read from a TextArena game's state, for the games whose state holds them plainly.

The random opponent plays uniformly among these where a game is listed here (`games.json` marks it
`"opponent_moves": "legal_moves"`); elsewhere it draws from the bracketed moves in the game's own text
(`"game_text"`). Either way it never reads what the agent wrote.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def _tic_tac_toe(ta: Any) -> list[str]:
    board = ta.state.game_state["board"]
    return [f"[{r * 3 + c}]" for r in range(3) for c in range(3) if board[r][c] == ""]


def _connect_four(ta: Any) -> list[str]:
    # Row 0 is the top of the board: a column is open while its top cell is empty.
    top = ta.state.game_state["board"][0]
    return [f"[col {c}]" for c, cell in enumerate(top) if cell == "."]


def _simple_tak(ta: Any) -> list[str]:
    board = ta.state.game_state["board"]
    n = len(board)
    return [f"[{r * n + c}]" for r in range(n) for c in range(n) if board[r][c] == ""]


def _othello(ta: Any) -> list[str]:
    # The game keeps the valid moves of the player to move; with none, any reply is the forced skip and the
    # opponent falls back to the game's text.
    return [f"[{r} {c}]" for r, c in ta.state.game_state["valid_moves"]]


def _nim(ta: Any) -> list[str]:
    return [f"[{i} {q}]" for i, pile in enumerate(ta.state.game_state["piles"]) for q in range(1, pile + 1)]


def _fixed(*moves: str) -> Callable[[Any], list[str]]:
    """Games whose every turn offers the same moves (simultaneous-move rounds, roll-or-hold)."""
    return lambda ta: list(moves)


#: Module name of the game in TextArena -> its legal moves as move strings the game accepts.
LEGAL_MOVES: dict[str, Callable[[Any], list[str]]] = {
    "TicTacToe": _tic_tac_toe,
    "ConnectFour": _connect_four,
    "SimpleTak": _simple_tak,
    "Othello": _othello,
    "Nim": _nim,
    # The text-drawn opponent chose among `[rock]`, `[r]`, digits from format examples, ... and its tries
    # after a refusal came from the refusal's own list: not uniform over the three moves (a player always
    # answering rock won 15 of 20 matches against it).
    "IteratedRockPaperScissors": _fixed("[rock]", "[paper]", "[scissors]"),
    "IteratedMatchingPennies": _fixed("[heads]", "[tails]"),
    "PigDice": _fixed("[roll]", "[hold]"),
}


def legal_moves(game_name: str, ta: Any) -> list[str] | None:
    """The legal moves of the player to move in raw TextArena env `ta`, or None when the game is not listed.

    Args:
        game_name: the game's module name in TextArena (`TicTacToe`).
        ta: the raw TextArena env, after `reset`.

    Returns:
        Move strings in the game's format (`[4]`, `[col 3]`), or None if this game's state is not read here.
    """
    read = LEGAL_MOVES.get(game_name)
    return None if read is None else read(ta)
