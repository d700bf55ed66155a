"""One-ply tactics for the random opponent in line-making games: take an immediate win, else block one.

A uniformly random opponent in TicTacToe, ConnectFour or SimpleTak never completes or blocks a line, so a
trivial strategy beats it: stacking one ConnectFour column won 6 of 6 games, filling SimpleTak's first row
6 of 6. Training against it teaches that strategy. Where a game is listed here the random opponent plays a
move that wins at once if there is one, else one that stops the agent winning at once, else a random legal
move. Each check places a stone on the game's own board, asks the game's own win test and takes it back,
so the rules are TextArena's, not a copy of them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from envs.textarena.legal_moves import legal_moves


def _tic_tac_toe(ta: Any, player: int, move: str) -> bool:
    board = ta.state.game_state["board"]
    row, col = divmod(int(move.strip("[]")), 3)
    board[row][col] = "O" if player == 0 else "X"
    try:
        return bool(ta._check_winner())
    finally:
        board[row][col] = ""


def _connect_four(ta: Any, player: int, move: str) -> bool:
    board = ta.state.game_state["board"]
    col = int(move.strip("[]").split()[-1])
    row = ta._get_available_row(col)
    board[row][col] = "X" if player == 0 else "O"
    try:
        return bool(ta._check_win(row, col))
    finally:
        board[row][col] = "."


def _simple_tak(ta: Any, player: int, move: str) -> bool:
    board = ta.state.game_state["board"]
    row, col = divmod(int(move.strip("[]")), len(board))
    symbol = "O" if player == 0 else "X"
    board[row][col] = symbol
    try:
        return bool(ta._check_win(symbol))
    finally:
        board[row][col] = ""


#: Module name of the game in TextArena -> whether `player` playing `move` (one of its legal moves, the same
#: for both players) wins at once.
WINS_AT_ONCE: dict[str, Callable[[Any, int, str], bool]] = {
    "TicTacToe": _tic_tac_toe,
    "ConnectFour": _connect_four,
    "SimpleTak": _simple_tak,
}


def tactical_moves(game_name: str, ta: Any) -> list[str] | None:
    """The moves one-ply tactics pick for the player to move in raw TextArena env `ta`.

    Args:
        game_name: the game's module name in TextArena (`ConnectFour`).
        ta: the raw TextArena env, after `reset`, with the game not over.

    Returns:
        The legal moves that win at once; if none, those that take the one cell or column where the other
        player would win at once; None when neither exists or the game is not in `WINS_AT_ONCE`.
    """
    wins = WINS_AT_ONCE.get(game_name)
    moves = legal_moves(game_name, ta)
    if wins is None or not moves:
        return None
    mover = ta.state.current_player_id
    for player in (mover, 1 - mover):
        found = [m for m in moves if wins(ta, player, m)]
        if found:
            return found
    return None
