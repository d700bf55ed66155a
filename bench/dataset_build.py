"""Dataset build time: the openings of 512 rows rendered with one env per (id, kwargs) (what
trainer.datasets does) against a fresh env per row (the baseline), in the same run.

Run: python bench/dataset_build.py [--rows 512]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def fresh_per_row(episodes: list[tuple[str, int, dict]]) -> list[list[dict]]:
    """The baseline: make, reset and close an env for every row."""
    import envs

    out = []
    for env_id, seed, kwargs in episodes:
        env = envs.make(env_id, **kwargs)
        try:
            messages, _ = env.reset(seed=seed)
        finally:
            env.close()
        out.append([{"role": str(m["role"]), "content": str(m.get("content") or "")} for m in messages])
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

    from trainer.datasets import assign_envs, opening_prompts, rows_for_episodes

    print(
        f"{'workload':<18} {'rows':>5} {'fresh env/row s':>16} {'one env/kind s':>15} {'rows total s':>13} {'ratio':>6}"
    )
    for name in ("guess-number-v0", "textarena", "text-game"):
        entries = group_entries(name)
        episodes = [
            (e["id"], i, dict(e["kwargs"])) for i, e in enumerate(assign_envs(entries, args.rows, seed=0))
        ]
        assert opening_prompts(episodes[:32]) == fresh_per_row(episodes[:32])  # same prompts (and warm)
        timings: dict[str, list[float]] = {"fresh": [], "kind": [], "rows": []}
        for _ in range(args.repeats):
            for key, fn in (
                ("fresh", fresh_per_row),
                ("kind", opening_prompts),
                ("rows", lambda eps: rows_for_episodes(eps, "train")),
            ):
                start = time.perf_counter()
                fn(episodes)
                timings[key].append(time.perf_counter() - start)
        fresh, kind, rows = (statistics.median(timings[k]) for k in ("fresh", "kind", "rows"))
        print(f"{name:<18} {args.rows:>5} {fresh:>16.3f} {kind:>15.3f} {rows:>13.3f} {kind / fresh:>6.2f}")


if __name__ == "__main__":
    main()
