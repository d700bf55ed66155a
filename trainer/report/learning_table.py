"""The table a run ends with: per env, the first and last validation beside the trivial players.

A success rate that rises says little on its own (a model can climb to below what a random player
scores). So when training ends, `trainer.run` plays each env's random player and scripted expert on
the validation episodes the model played (same env, seeds, kwargs and turn cap) and prints them
beside the model's first and last validation, each with its 95 % Wilson interval.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from envs.baselines.baseline_players import PLAYERS, play_baseline
from envs.baselines.success_interval import wilson_interval
from rollout.episode_kind import EpisodeKind
from trainer.report.behaviour_metrics import validation_success


def validation_episodes(val_file: str | Path) -> dict[str, list[tuple[str, int, dict[str, Any]]]]:
    """The validation dataset's episodes by the source verl reports them under: [(env id, seed, kwargs)]."""
    import pandas as pd

    from rollout.episode_row import EpisodeRow

    rows = pd.read_parquet(val_file, columns=[EpisodeRow.EXTRA_INFO, EpisodeRow.DATA_SOURCE]).to_dict(
        "records"
    )
    out: dict[str, list[tuple[str, int, dict[str, Any]]]] = defaultdict(list)
    for row in map(EpisodeRow.from_row, rows):
        out[str(row.data_source)].append((row.env_id, int(row.seed), dict(row.env_kwargs)))
    return dict(out)


def baseline_success(
    episodes: list[tuple[str, int, dict[str, Any]]], max_turns: int | None
) -> dict[str, tuple[int, int]]:
    """{player: (successes, episodes)} of each trivial player every env here has, on these episodes."""
    by_kind: dict[EpisodeKind, list[int]] = defaultdict(list)
    for env_id, seed, kwargs in episodes:
        by_kind[EpisodeKind(env_id, kwargs)].append(seed)
    out: dict[str, tuple[int, int]] = {}
    for player in PLAYERS:
        wins = played = 0
        for kind, seeds in by_kind.items():
            result = play_baseline(kind.env_id, player, seeds, dict(kind.kwargs), max_turns)
            if result is None:
                break
            wins, played = wins + result.successes, played + result.episodes
        else:
            out[player] = (wins, played)
    return out


def _cell(successes: float, episodes: int) -> str:
    rate = successes / episodes if episodes else 0.0
    lo, hi = wilson_interval(rate, episodes)
    return f"{rate:6.1%} ({lo:.0%}-{hi:.0%})"


def _model_cell(rate: float | None, episodes: int) -> str:
    return "-" if rate is None else _cell(round(rate * episodes), episodes)


def learning_table(
    val_records: list[dict[str, Any]],
    episodes: dict[str, list[tuple[str, int, dict[str, Any]]]],
    max_turns: int | None,
    warm_started: bool = False,
) -> str | None:
    """Per env: success at the first and last validation, then the random player and the expert.

    Args:
        val_records: The run's validation records (`MetricsLog.records("val")`), in step order.
        episodes: The validation episodes by source (`validation_episodes`): [(env id, seed, kwargs)].
        max_turns: The rollout's turn cap, applied to the trivial players too (None: the env's own).
        warm_started: Whether RL started from a warm start: step 0 is then the warm-started model's.

    Returns:
        The table as text, or None when the run has no validation with per-env success.

    >>> records = [{"step": 0, "val-aux/guess-number-v0/success/mean@1": 0.0},
    ...            {"step": 20, "val-aux/guess-number-v0/success/mean@1": 0.5}]
    >>> eps = {"guess-number-v0": [("guess-number-v0", s, {"difficulty": "easy"}) for s in range(8)]}
    >>> print(learning_table(records, eps, 6))
    env              episodes  step 0 (zero-shot)  step 20           random           expert
    guess-number-v0         8    0.0% (0%-32%)      50.0% (22%-78%)   12.5% (2%-47%)  100.0% (68%-100%)
    """
    validations = [(r["step"], rates) for r in val_records if (rates := validation_success(r))]
    if not validations:
        return None
    (first_step, first), (last_step, last) = validations[0], validations[-1]
    label = f"step {first_step}"
    if first_step == 0:
        label += " (warm-started)" if warm_started else " (zero-shot)"
    both = len(validations) > 1
    columns = [label] + ([f"step {last_step}"] if both else []) + list(PLAYERS)
    rows = []
    for source, source_episodes in episodes.items():
        n = len(source_episodes)
        cells = [_model_cell(first.get(source), n)] + ([_model_cell(last.get(source), n)] if both else [])
        players = baseline_success(source_episodes, max_turns)
        cells += [_cell(*players[p]) if p in players else "-" for p in PLAYERS]
        rows.append([source, str(n), *cells])
    header = ["env", "episodes", *columns]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(header, widths, strict=True)).rstrip()]
    for row in rows:
        cells = [row[0].ljust(widths[0]), row[1].rjust(widths[1])]
        cells += [c.ljust(w) for c, w in zip(row[2:], widths[2:], strict=True)]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)
