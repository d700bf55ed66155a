"""Reward curve PNG from the metrics JSONL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trainer.report.progress import REWARD_KEY, SUCCESS_KEY, MetricsLog
from trainer.report.validation_reward import describe, validation_rewards


def validation_series(records: list[dict[str, Any]]) -> dict[str, list[tuple[int, float]]]:
    """Per way of playing (sampled, greedy), the validation reward at each step that has one, under the
    label the plot shows (``validation reward, greedy``); the two are never averaged together.

    Example:
        >>> validation_series([{"step": 0, "val-core/g/reward/mean@1": 0.1, "val-core/g@greedy/reward/mean@1": 0.5}])
        {'validation reward, sampled': [(0, 0.1)], 'validation reward, greedy': [(0, 0.5)]}
    """
    series: dict[str, list[tuple[int, float]]] = {}
    envs: dict[str, int] = {}
    for record in records:
        for way, (value, count) in validation_rewards(record).items():
            envs[way] = max(envs.get(way, 0), count)
            series.setdefault(way, []).append((record["step"], value))
    return {describe(way, envs[way]): points for way, points in series.items()}


def plot_reward_curve(metrics_file: str | Path, out_png: str | Path, title: str = "turngym") -> Path | None:
    """Training reward (and success rate, validation reward sampled and greedy apart) per step; None when
    there is nothing to plot."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    log = MetricsLog(metrics_file)
    train = [r for r in log.records("train") if REWARD_KEY in r]
    if not train:
        return None
    fig, ax = plt.subplots(figsize=(7, 4))
    steps = [r["step"] for r in train]
    ax.plot(steps, [r[REWARD_KEY] for r in train], marker="o", label="train reward (mean)")
    if any(SUCCESS_KEY in r for r in train):
        ax.plot(
            steps,
            [r.get(SUCCESS_KEY, float("nan")) for r in train],
            linestyle="--",
            label="train success rate",
        )
    for label, points in validation_series(log.records()).items():
        ax.plot([s for s, _ in points], [v for _, v in points], marker="s", label=label)
    ax.set_xlabel("training step")
    ax.set_ylabel("reward")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    out_png = Path(out_png)
    out_png.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(out_png, dpi=100)
    plt.close(fig)
    return out_png
