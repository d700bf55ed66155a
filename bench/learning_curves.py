"""The learning curves of several runs in one picture: training success per step and validation success.

    python bench/learning_curves.py --out curves.png A=/tmp/runA B=/tmp/runB C=/tmp/runC

Each run is `label=<run folder>` (its metrics.jsonl). Training success is the share of a step's
training episodes that succeeded (solid); validation success the sampled held-out success of each
validation (markers, dashed). A recipe is judged by all its runs, so they share the axes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def plot_runs(runs: dict[str, Path], out: Path, title: str = "learning curves") -> Path:
    """Plot every run's training and validation success into `out` (PNG); return it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from trainer.report.progress import SUCCESS_KEY, MetricsLog

    fig, ax = plt.subplots(figsize=(8, 4.5))
    for index, (label, folder) in enumerate(runs.items()):
        color = f"C{index}"
        records = MetricsLog(folder / "metrics.jsonl").records()
        train = [r for r in records if r.get("kind") == "train" and SUCCESS_KEY in r]
        ax.plot(
            [r["step"] for r in train],
            [r[SUCCESS_KEY] for r in train],
            color=color,
            alpha=0.6,
            label=f"{label} train",
        )
        val = []
        for r in records:
            keys = [
                k
                for k in r
                if k.startswith("val-aux/") and k.endswith("/success/mean@1") and "@greedy" not in k
            ]
            if r.get("kind") == "val" and keys:
                val.append((r["step"], sum(r[k] for k in keys) / len(keys)))
        if val:
            ax.plot(
                [s for s, _ in val],
                [v for _, v in val],
                color=color,
                marker="s",
                linestyle="--",
                label=f"{label} validation",
            )
    ax.set_xlabel("training step")
    ax.set_ylabel("success rate")
    ax.set_ylim(0, 1)
    ax.set_title(title)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def main(argv: list[str] | None = None) -> int:
    """Parse `label=folder` pairs and write the picture."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=Path("learning_curves.png"))
    parser.add_argument("--title", default="learning curves")
    parser.add_argument("runs", nargs="+", help="label=<run folder>")
    args = parser.parse_args(argv)
    runs = {}
    for item in args.runs:
        label, sep, folder = item.partition("=")
        if not sep or not (Path(folder) / "metrics.jsonl").is_file():
            print(f"learning_curves: {item!r} is not label=<run folder with metrics.jsonl>", file=sys.stderr)
            return 2
        runs[label] = Path(folder)
    print(plot_runs(runs, args.out, args.title))
    return 0


if __name__ == "__main__":
    sys.exit(main())
