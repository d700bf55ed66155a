"""The model beside the trivial players: success with its interval and behaviour, on the same seeds."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from envs.baselines.baseline_players import PLAYER_METHODS, PLAYERS, play_baseline
from envs.baselines.success_interval import wilson_interval

# The behaviour rates shown as columns when any row has them (others stay in the summary).
COLUMNS = (
    "follow_rate",
    "in_range_rate",
    "legal_move_rate",
    "repeat_rate",
    "block_rate",
    "with_text_rate",
    "readable_turn_rate",
)


def baseline_rows(
    env_id: str, seeds: Sequence[int], env_kwargs: dict[str, Any], max_turns: int | None
) -> dict[str, dict[str, float]]:
    """{player: {"episodes", "success_rate", "reward_mean", "behaviour/<rate>"...}} for the env's players.

    Args:
        env_id: The env the model played.
        seeds: The seeds the model's episodes had (each played once per player).
        env_kwargs: The env's constructor kwargs.
        max_turns: The model's turn cap, applied to the players too.

    Returns:
        One row per player the env has (none for an env without `random_action`/`expert_action`).

    >>> rows = baseline_rows("guess-number-v0", range(8), {"difficulty": "easy"}, 6)
    >>> rows["expert"]["success_rate"]
    1.0
    """
    rows = {}
    for player in PLAYERS:
        result = play_baseline(env_id, player, list(seeds), env_kwargs, max_turns)
        if result is None:
            continue
        rows[player] = {
            "episodes": result.episodes,
            "success_rate": result.success_rate,
            "reward_mean": result.mean_return,
            **{f"behaviour/{k}": v for k, v in result.behaviour.items()},
        }
    return rows


def skipped_players(env_id: str, env_kwargs: dict[str, Any], rows: dict[str, dict[str, float]]) -> str:
    """One line naming the trivial players `baseline_rows` left out and why; "" when none were.

    Args:
        env_id: The env the model played.
        env_kwargs: Its constructor kwargs (a `remote` URL means the env was served).
        rows: What `baseline_rows` returned.

    Returns:
        E.g. "baselines skipped: random (guess-number-v0 served at http://... offers no random_action)",
        or "".

    >>> skipped_players("guess-number-v0", {}, {"random": {}, "expert": {}})
    ''
    >>> skipped_players("my-chat-v0", {}, {})
    'baselines skipped: random, expert (my-chat-v0 has no random_action or expert_action)'
    """
    missing = [p for p in PLAYERS if p not in rows]
    if not missing:
        return ""
    methods = " or ".join(PLAYER_METHODS[p] for p in missing)
    remote = env_kwargs.get("remote")
    where = f"{env_id} served at {remote} offers no {methods}" if remote else f"{env_id} has no {methods}"
    return f"baselines skipped: {', '.join(missing)} ({where})"


def format_comparison(rows: dict[str, dict[str, float]]) -> str:
    """A table: one row per player (the model first), success with its 95 % Wilson interval and behaviour.

    >>> print(format_comparison({"model": {"episodes": 4, "success_rate": 0.5, "reward_mean": 0.2}}))
    player  episodes  success  95% interval  reward
    ------  --------  -------  ------------  ------
    model          4    0.500   0.150-0.850   0.200
    """
    shown = [c for c in COLUMNS if any(f"behaviour/{c}" in r for r in rows.values())]
    header = [
        "player",
        "episodes",
        "success",
        "95% interval",
        "reward",
        *(c.removesuffix("_rate") for c in shown),
    ]
    lines = []
    for name, row in rows.items():
        n = int(row.get("episodes", 0))
        rate = float(row.get("success_rate", 0.0))
        lo, hi = wilson_interval(rate, n)
        cells = [
            name,
            str(n),
            f"{rate:.3f}",
            f"{lo:.3f}-{hi:.3f}",
            f"{float(row.get('reward_mean', 0.0)):.3f}",
        ]
        cells += [f"{row[f'behaviour/{c}']:.3f}" if f"behaviour/{c}" in row else "-" for c in shown]
        lines.append(cells)
    widths = [max(len(h), *(len(r[i]) for r in lines)) for i, h in enumerate(header)]

    def fmt(cells: list[str]) -> str:
        return "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        )

    return "\n".join([fmt(header), fmt(["-" * w for w in widths]), *(fmt(r) for r in lines)])
