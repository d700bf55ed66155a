"""Train on your own episodes: a parquet of (env id, seed, env kwargs) rows, then the training command.

    python examples/own_dataset.py my_rows          # writes my_rows/train.parquet and my_rows/val.parquet
    python -m trainer.run data.train_files=my_rows/train.parquet data.val_files=my_rows/val.parquet \\
        turngym.run_name=my-rows

One row is one episode: ``env_id`` (a registered id; your own via ``turngym.import_modules``), ``seed``
(a non-negative integer: the same seed plays the same episode) and optionally ``env_kwargs`` (a JSON
object string, or null for the env's defaults). trainer.run checks every row before anything starts,
expands them into ``<run>/data/`` (opening prompts, verl's row layout) and never writes your files.
Here: guess-number at three levels, more of the hard ones, and a few mazes; validation uses other seeds.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def my_rows(split: str) -> list[dict]:
    """The episodes of one split: each ``{env_id, seed, env_kwargs}``."""
    first = 0 if split == "train" else 50_000  # held-out seeds, disjoint from training's
    counts = (
        {"easy": 8, "medium": 8, "hard": 16, "maze": 8}
        if split == "train"
        else {"easy": 4, "medium": 4, "hard": 4, "maze": 4}
    )
    rows = []
    for level in ("easy", "medium", "hard"):
        rows += [
            {"env_id": "guess-number-v0", "seed": first + i, "env_kwargs": json.dumps({"difficulty": level})}
            for i in range(counts[level])
        ]
    rows += [{"env_id": "maze-v0", "seed": first + i, "env_kwargs": None} for i in range(counts["maze"])]
    return rows


def write_rows(folder: str | Path) -> tuple[Path, Path]:
    """Write ``train.parquet`` and ``val.parquet`` into ``folder``; returns their paths."""
    import pandas as pd

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for split in ("train", "val"):
        path = folder / f"{split}.parquet"
        pd.DataFrame(my_rows(split)).to_parquet(path)
        paths.append(path)
    return paths[0], paths[1]


def train_command(train: Path, val: Path, run_name: str = "my-rows") -> list[str]:
    """The trainer.run overrides that train on these files (any other override may follow)."""
    return [f"data.train_files={train}", f"data.val_files={val}", f"turngym.run_name={run_name}"]


if __name__ == "__main__":
    train, val = write_rows(sys.argv[1] if len(sys.argv) > 1 else "my_rows")
    print(f"wrote {train} and {val}; train on them with:")
    print("python -m trainer.run " + " ".join(train_command(train, val)))
