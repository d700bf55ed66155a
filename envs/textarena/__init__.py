"""TextArena 0.7.4's one- and two-player games as turngym envs (`textarena/Sudoku-v0`, ...).

Registered at `import envs` from a static table (`games.json`); TextArena itself is imported on the first
`make`. `catalog.game(ta_id)` says why an id is left out. See docs/envs.md.
"""

from envs.textarena.catalog import Game, adapted_games, all_games, game, turngym_id

__all__ = ["Game", "adapted_games", "all_games", "game", "turngym_id"]
