"""Each game's difficulty ladder (``TextGame.difficulty_ladder``) beside the trivial players: the random
player's and the expert's success at every level, on the same seeds, under a turn cap.

A curriculum can only start learning where a group has a reward spread, so the easiest level must be
winnable (the expert wins it) and the random player's success must rise as the level falls (a policy
that plays about as well as chance still sees wins there).

Run: python bench/difficulty_ladders.py [--difficulty easy] [--seeds 200] [--turns 6]
"""

from __future__ import annotations

import argparse

GAMES = ("guess-number-v0", "wordle-v0", "maze-v0", "tic-tac-toe-v0")


def ladder_table(env_id: str, difficulty: str, seeds: int, turns: int) -> list[tuple[dict, float, float]]:
    """(level kwargs, random success, expert success) for every level of the game's ladder."""
    import envs
    from envs.baselines.baseline_players import play_baseline

    rows = []
    for level in envs.spec(env_id).load().difficulty_ladder(difficulty):
        kwargs = {"difficulty": difficulty, "action_tool": False, **level}
        rates = [
            play_baseline(env_id, p, range(seeds), kwargs, max_turns=turns).success_rate
            for p in ("random", "expert")
        ]
        rows.append((level, *rates))
    return rows


def main() -> None:
    """Print one table per game."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--difficulty", default="easy")
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--turns", type=int, default=6)
    args = parser.parse_args()
    print(f"{args.seeds} seeds per level, {args.turns} turns, difficulty {args.difficulty}")
    for env_id in GAMES:
        print(f"\n{env_id}\n  level  random  expert  kwargs")
        for i, (level, rand, expert) in enumerate(
            ladder_table(env_id, args.difficulty, args.seeds, args.turns)
        ):
            print(f"  {i:>5}  {rand:6.1%}  {expert:6.1%}  {level or '(the game itself)'}")


if __name__ == "__main__":
    main()
