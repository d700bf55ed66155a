"""What a move the game refuses means in each adapted TextArena game (`games.json`'s `invalid_move`).

TextArena games report a refused move with `state.set_invalid_move(reason)`: the player may try again
while fewer than `error_allowance` refusals in a row have been made (1 unless the game sets it), and the
next refusal ends the game as TextArena scores it (in two-player games the mover loses; single-player
games pay the reward the game passes). `generate_catalog` records one rule per game:
- "retry_with_allowance": that rule, with the game's own allowance;
- "ends_game": the refusal is itself the end of the game (the game says so in its reason), so turngym ends
  the game on the first one, scored by TextArena's invalid-move outcome;
- "not_reported": the game's source never refuses a move (any text is a move, or it applies a default).
"""

from __future__ import annotations

RETRY = "retry_with_allowance"
ENDS_GAME = "ends_game"
NOT_REPORTED = "not_reported"
RULES = (RETRY, ENDS_GAME, NOT_REPORTED)

#: Games (TextArena module names) whose refusals end the game, with why.
ENDS_GAME_BY_GAME: dict[str, str] = {
    # Minesweeper reports stepping on a mine as an invalid move ("You hit a mine at (r, c).") and passes the
    # share of safe cells revealed as the reward: with TextArena's allowance of 1 a mine cost nothing as
    # long as the next click was safe, so a clicker cleared every board.
    "Minesweeper": "a mine is reported as an invalid move: it ends the game, paid the share of safe cells revealed",
}


def invalid_move_rule(game_name: str, game_source: str) -> str:
    """The rule of game `game_name` (its TextArena module name) given the source of its modules.

    Args:
        game_name: the game's module name in TextArena (`Minesweeper`).
        game_source: the text of the game's own modules (`generate_catalog.game_files`).

    Returns:
        One of `RULES`.
    """
    if game_name in ENDS_GAME_BY_GAME:
        return ENDS_GAME
    return RETRY if "set_invalid_move(" in game_source else NOT_REPORTED
