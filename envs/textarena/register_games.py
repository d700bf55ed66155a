"""Register every adapted TextArena game as `textarena/<TextArena id>`, from the static table (no TextArena import)."""

from __future__ import annotations

from envs.registry.registration import register
from envs.textarena.catalog import adapted_games

CATEGORIES = {1: "textarena-single-player", 2: "textarena-two-player"}
# Turns allowed per TextArena turn: refused moves do not count as TextArena turns but do count here.
_TURN_SLACK = 2
_DEFAULT_MAX_TURNS = 200


def register_textarena_games() -> int:
    """Register the adapted games; returns how many."""
    games = adapted_games()
    for g in games:
        opponent = "; random opponent, opponent=self for self-play" if g.players == 2 else ""
        register(
            g.env_id,
            "envs.textarena.env:TextArenaEnv",
            category=CATEGORIES[g.players],
            description=f"TextArena {g.ta_id} (raw env, TextArena's rewards{opponent}).",
            max_turns=_TURN_SLACK * g.max_turns if g.max_turns else _DEFAULT_MAX_TURNS,
            game_id=g.ta_id,
        )
    return len(games)
