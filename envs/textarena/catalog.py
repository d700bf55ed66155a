"""The TextArena games turngym adapts: read from `games.json`, a table generated from TextArena 0.7.4.

Reading the table does not import TextArena (its import pulls openai and nltk and takes about a second), so
`import envs` registers every adapted id without it. `python -m envs.textarena.generate_catalog` rewrites
the table from an installed TextArena.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

TABLE = Path(__file__).with_name("games.json")
TEXTARENA_VERSION = "0.7.4"
NAMESPACE = "textarena"


@dataclass(frozen=True)
class Game:
    """One TextArena id: its raw env class, constructor arguments, players, and why it is left out (if it is)."""

    ta_id: str
    entry_point: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    players: int | None = None
    excluded: str | None = None
    numpy_global: bool = False  # draws from numpy's global generator (its state is swapped per episode too)
    # What a move the game refuses means (see `invalid_moves.py`): "retry_with_allowance", "ends_game" or
    # "not_reported"; and how many refused moves in a row TextArena allows before the next ends the game.
    invalid_move: str | None = None
    error_allowance: int | None = None
    # Where the random opponent finds its moves: "legal_moves" (the game's state), "legal_moves_tactics" (the
    # same, a move that wins or blocks a win at once first) or "game_text".
    opponent_moves: str | None = None

    @property
    def env_id(self) -> str:
        """The turngym id of this game (see `turngym_id`)."""
        return turngym_id(self.ta_id)

    @property
    def name(self) -> str:
        """The game's module name in TextArena (`Sudoku`, `TicTacToe`)."""
        return self.entry_point.split(":")[0].split(".")[2]

    @property
    def max_turns(self) -> int | None:
        """TextArena's own turn limit for this id, when its constructor takes one."""
        value = self.kwargs.get("max_turns")
        return value if isinstance(value, int) else None


def turngym_id(ta_id: str) -> str:
    """`Sudoku-v0-hard` -> `textarena/Sudoku-v0-hard`: TextArena's id verbatim in the `textarena` namespace."""
    return f"{NAMESPACE}/{ta_id}"


@lru_cache(maxsize=1)
def all_games() -> dict[str, Game]:
    """Every TextArena id in the table (adapted or not), by TextArena id."""
    rows = json.loads(TABLE.read_text())
    return {row["ta_id"]: Game(**row) for row in rows}


def adapted_games() -> list[Game]:
    """The games registered in turngym: one or two players, nothing downloaded, every contract test passed."""
    return [g for g in all_games().values() if g.excluded is None]


def game(ta_id: str) -> Game:
    """The adapted game `ta_id`; an id that is left out or unknown raises ValueError saying why."""
    found = all_games().get(ta_id)
    if found is None:
        raise ValueError(
            f"{ta_id!r} is not a TextArena {TEXTARENA_VERSION} id; `python -m envs list` shows the adapted ones"
        )
    if found.excluded is not None:
        raise ValueError(f"TextArena {ta_id!r} is not adapted: {found.excluded}")
    return found
