"""Dataset build time: 512 rows of trainer.data.datasets (EpisodeRow, prompts rendered once with a fresh env
per row) against the env work alone (make, reset, close per row), and one env per (id, kwargs)
reset for each seed (the alternative not taken), in the same run.

Run: python bench/dataset_build.py [--rows 512]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def one_env_per_kind(episodes: list[tuple[str, int, dict]]) -> list[list[dict]]:
    """The alternative: one env per (id, kwargs), reset for every seed."""
    import json

    import envs

    built, out = {}, []
    try:
        for env_id, seed, kwargs in episodes:
            key = (env_id, json.dumps(kwargs, sort_keys=True))
            if key not in built:
                built[key] = envs.make(env_id, **kwargs)
            messages, _ = built[key].reset(seed=seed)
            out.append([{"role": str(m["role"]), "content": str(m.get("content") or "")} for m in messages])
    finally:
        for env in built.values():
            env.close()
    return out


def group_entries(name: str) -> list[dict]:
    """The mixture of one of trainer/config/env/<name>.yaml, or a single id with easy difficulty."""
    from omegaconf import OmegaConf

    path = ROOT / "trainer" / "config" / "env" / f"{name}.yaml"
    if path.exists():
        return [
            {"id": str(e.id), "weight": float(e.get("weight", 1.0)), "kwargs": dict(e.get("kwargs") or {})}
            for e in OmegaConf.load(path).mixture
        ]
    return [{"id": name, "weight": 1.0, "kwargs": {"difficulty": "easy"}}]


def main() -> None:
    """Median of 5 builds per method and workload; prints seconds and the ratio to the baseline."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=512)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    from trainer.data.datasets import assign_envs, opening_prompts, rows_for_episodes

    print(
        f"{'workload':<16} {'rows':>5} {'env work s':>11} {'one env/kind':>13} {'rows s':>8} {'rows/env work':>14}"
    )
    for name in ("guess-number-v0", "textarena", "text-game"):
        entries = group_entries(name)
        episodes = [
            (e["id"], i, dict(e["kwargs"])) for i, e in enumerate(assign_envs(entries, args.rows, seed=0))
        ]
        assert one_env_per_kind(episodes[:32]) == opening_prompts(episodes[:32])  # same prompts (and warm)
        timings: dict[str, list[float]] = {"fresh": [], "kind": [], "rows": []}
        for _ in range(args.repeats):
            for key, fn in (
                ("fresh", opening_prompts),
                ("kind", one_env_per_kind),
                ("rows", lambda eps: rows_for_episodes(eps, "train")),
            ):
                start = time.perf_counter()
                fn(episodes)
                timings[key].append(time.perf_counter() - start)
        fresh, kind, rows = (statistics.median(timings[k]) for k in ("fresh", "kind", "rows"))
        print(
            f"{name:<16} {args.rows:>5} {fresh:>11.3f} {kind:>8.3f} ({kind / fresh:.2f}x) {rows:>8.3f} "
            f"{rows / fresh:>13.2f}x"
        )


if __name__ == "__main__":
    main()
