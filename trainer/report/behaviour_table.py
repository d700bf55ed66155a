"""How each env was played at the first and last validation, beside the trivial players on the same
episodes: the behaviour rates the env declares (legal moves, repeats, blocks, feedback followed...).

A success rate says whether the games were won, not what was learned: a model at the random player's
success may still have learned legal moves, or to block the opponent's line. So the end of a run prints
this table under the success table (``trainer.report.learning_table``).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from envs.baselines.baseline_players import PLAYERS, play_baseline
from envs.baselines.behaviour import behaviour_rates_of
from rollout.episode_kind import EpisodeKind

PREFIX = "val-aux/{source}/behaviour/"


def baseline_behaviour(
    episodes: list[tuple[str, int, dict[str, Any]]], max_turns: int | None
) -> dict[str, dict[str, float]]:
    """{player: {rate: value}} of each trivial player on these episodes (one env's), pooled over kinds."""
    by_kind: dict[EpisodeKind, list[int]] = defaultdict(list)
    for env_id, seed, kwargs in episodes:
        by_kind[EpisodeKind(env_id, kwargs)].append(seed)
    out: dict[str, dict[str, float]] = {}
    for player in PLAYERS:
        weighted: dict[str, float] = defaultdict(float)
        total = 0
        for kind, seeds in by_kind.items():
            result = play_baseline(kind.env_id, player, seeds, dict(kind.kwargs), max_turns)
            if result is None:
                break
            rates = {k: v for k, v in result.behaviour.items() if not k.endswith("_per_episode")}
            for name, value in rates.items():
                weighted[name] += value * len(seeds)
            total += len(seeds)
        else:
            if total:
                out[player] = {name: value / total for name, value in weighted.items()}
    return out


def behaviour_table(
    val_records: list[dict[str, Any]],
    episodes: dict[str, list[tuple[str, int, dict[str, Any]]]],
    max_turns: int | None,
) -> str | None:
    """One line per env and player: its behaviour rates at the first and last validation, then the
    random player's and the expert's on the same episodes.

    Args:
        val_records: The run's validation records, in step order (with ``val-aux/<source>/behaviour/*``).
        episodes: The validation episodes by source (``trainer.report.learning_table.validation_episodes``).
        max_turns: The rollout's turn cap, applied to the trivial players too.

    Returns:
        The table as text, or None when no env declares behaviour rates.

    >>> records = [{"step": 0, "val-aux/tic-tac-toe-v0/behaviour/legal_move_rate": 0.5}]
    >>> eps = {"tic-tac-toe-v0": [("tic-tac-toe-v0", s, {"difficulty": "easy"}) for s in range(4)]}
    >>> print(behaviour_table(records, eps, 6))  # doctest: +NORMALIZE_WHITESPACE
    env             who     legal_move  repeat  block
    tic-tac-toe-v0  step 0  50%         -       -
    tic-tac-toe-v0  random  100%        0%      33%
    tic-tac-toe-v0  expert  100%        0%      100%
    """
    rows: list[list[str]] = []
    names_seen: list[str] = []
    for source, source_episodes in episodes.items():
        env_id = source_episodes[0][0] if source_episodes else source
        names = list(behaviour_rates_of(env_id))
        if not names:
            continue
        names_seen += [n for n in names if n not in names_seen]
        shown = {}
        prefix = PREFIX.format(source=source)
        steps = [r for r in val_records if any(k.startswith(prefix) for k in r)]
        for record in steps[:1] + steps[1:][-1:]:
            shown[f"step {record['step']}"] = {n: record.get(prefix + n) for n in names}
        shown.update(baseline_behaviour(source_episodes, max_turns))
        for who, rates in shown.items():
            rows.append([source, who, *(_rate(rates.get(n)) for n in names_seen)])
    if not rows:
        return None
    header = ["env", "who", *(n.removesuffix("_rate") for n in names_seen)]
    rows = [row + ["-"] * (len(header) - len(row)) for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in [header, *rows]
    )


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"
