"""Reward curve PNG from the metrics JSONL."""

from __future__ import annotations

from pathlib import Path

from trainer.progress import REWARD_KEY, SUCCESS_KEY, MetricsLog


def plot_reward_curve(metrics_file: str | Path, out_png: str | Path, title: str = "turngym") -> Path | None:
    """Training reward (and success rate, validation reward) per step; None when there is nothing to plot."""
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
    val = []
    for r in log.records():
        keys = [k for k in r if k.startswith("val-core/") and "reward" in k]
        if keys:
            val.append((r["step"], sum(r[k] for k in keys) / len(keys)))
    if val:
        ax.plot([s for s, _ in val], [v for _, v in val], marker="s", label="validation reward")
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
