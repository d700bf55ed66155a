"""Steps/s of guess-number (reset + expert steps) through envs.make, beside a bare-Python loop of the same game.

Rows, all measured in one run, interleaved (round-robin, best of `--rounds`):
- bare python: one plain-Python game object, reset from one `random.Random` (the baseline);
- bare python, new per episode: a new game object and `random.Random(seed)` each episode;
- turngym env reused: one `envs.make` env (with the layer `make` wraps it in), `reset()` per episode;
- turngym make() per episode: `envs.make` + `reset(seed=episode)` per episode;
- turngym make(**kwargs) per episode: the same with the row's env kwargs, as verl's agent loop calls it
  (`difficulty="medium"`, the default: the same game, so only the cost of `make` differs).
After the rows, the cost of one `envs.make` call alone, without and with those kwargs (microseconds,
best of the same rounds), and their ratio.
Ratios are steps/s over the bare-python row; rows that build a new env per episode also print their
ratio over the bare row that builds a new game per episode (the like-for-like baseline: both pay for a
new object and a seeded generator each episode). `--peers` adds the same game through the peer libraries
that are installed (GEM, TextArena, SkyRL-gym; see bench/env_peers.py), measured in the same rounds.
Time is this process's CPU time by default (`--clock cpu`): on a shared machine wall time mostly
measures the other processes; `--clock wall` measures it.

Run: python bench/env_throughput.py [--episodes N] [--rounds R] [--clock cpu|wall] [--peers] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import random
import sys
import time
from pathlib import Path

# The checkout this script is in, not whichever one is installed (a worktree measures its own code).
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # env_peers.py and bare_guess_number.py beside it

import env_peers  # noqa: E402
from bare_guess_number import BareGuessNumber, register_bare_env  # noqa: E402

import envs  # noqa: E402

clock = time.process_time


def bare_python(episodes: int) -> tuple[int, float]:
    """reset + step of the plain-Python game with the same expert."""
    game, rng = BareGuessNumber(), random.Random(0)
    steps = 0
    start = clock()
    for _ in range(episodes):
        game.reset(rng)
        while True:
            _, _, done = game.step(game.expert())
            steps += 1
            if done:
                break
    return steps, clock() - start


def bare_python_fresh(episodes: int) -> tuple[int, float]:
    """A new plain-Python game and a new `random.Random(seed)` per episode."""
    steps = 0
    start = clock()
    for seed in range(episodes):
        game = BareGuessNumber()
        game.reset(random.Random(seed))
        while True:
            _, _, done = game.step(game.expert())
            steps += 1
            if done:
                break
    return steps, clock() - start


def turngym_reused(episodes: int, env_id: str = "guess-number-v0") -> tuple[int, float]:
    """reset + step with the scripted expert through one `envs.make` env, its wrapper included."""
    env = envs.make(env_id)
    env.reset(seed=0)
    expert = env.unwrapped.expert_action
    steps = 0
    start = clock()
    for _ in range(episodes):
        env.reset()
        while True:
            _, _, terminated, truncated, _ = env.step(expert())
            steps += 1
            if terminated or truncated:
                break
    return steps, clock() - start


def turngym_make_per_episode(episodes: int, env_id: str = "guess-number-v0") -> tuple[int, float]:
    """`envs.make` + `reset(seed=episode)` every episode, then the expert's steps."""
    steps = 0
    start = clock()
    for seed in range(episodes):
        env = envs.make(env_id)
        env.reset(seed=seed)
        expert = env.unwrapped.expert_action
        while True:
            _, _, terminated, truncated, _ = env.step(expert())
            steps += 1
            if terminated or truncated:
                break
    return steps, clock() - start


#: The kwargs of the `make(**kwargs)` row: a dataset row's `env_kwargs`, equal to the defaults (same game).
ROW_KWARGS = {"difficulty": "medium"}


def turngym_make_kwargs_per_episode(episodes: int) -> tuple[int, float]:
    """`turngym_make_per_episode` with `envs.make(env_id, **ROW_KWARGS)`, as verl's agent loop calls it."""
    steps = 0
    start = clock()
    for seed in range(episodes):
        env = envs.make("guess-number-v0", **ROW_KWARGS)
        env.reset(seed=seed)
        expert = env.unwrapped.expert_action
        while True:
            _, _, terminated, truncated, _ = env.step(expert())
            steps += 1
            if terminated or truncated:
                break
    return steps, clock() - start


def make_only(calls: int, kwargs: dict) -> float:
    """CPU (or wall) seconds per `envs.make("guess-number-v0", **kwargs)` call, nothing else."""
    make = envs.make
    start = clock()
    for _ in range(calls):
        make("guess-number-v0", **kwargs)
    return (clock() - start) / calls


def bare_game_reused(episodes: int) -> tuple[int, float]:
    """`turngym_reused` with the bare game as a TextEnv (bench/bare_guess_number.py): the framework's cost."""
    return turngym_reused(episodes, register_bare_env())


def bare_game_make_per_episode(episodes: int) -> tuple[int, float]:
    """`turngym_make_per_episode` with the bare game as a TextEnv: the framework's cost."""
    return turngym_make_per_episode(episodes, register_bare_env())


ROWS = [
    ("bare python", bare_python),
    ("bare python, new per episode", bare_python_fresh),
    ("turngym env reused", turngym_reused),
    ("turngym make() per episode", turngym_make_per_episode),
    ("turngym make(**kwargs) per ep.", turngym_make_kwargs_per_episode),
    ("turngym + bare game, reused", bare_game_reused),
    ("turngym + bare game, make()", bare_game_make_per_episode),
]
GOALS = {"turngym env reused": 0.7, "turngym make() per episode": 0.5}


def profile(episodes: int, top: int) -> None:
    """cProfile top entries (by own time) of both turngym rows."""
    for name, fn in ROWS[2:4]:
        fn(min(episodes, 200))  # warm-up: imports and first-use caches are not what is measured
        profiler = cProfile.Profile(clock)  # the same clock as the figures (CPU time by default)
        profiler.enable()
        fn(episodes)
        profiler.disable()
        print(f"\n===== {name}: top {top} by own time =====")
        pstats.Stats(profiler).sort_stats("tottime").print_stats(top)


def main() -> None:
    """Print steps/s of every row and their ratios to bare python (best of `--rounds`, interleaved)."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--episodes", type=int, default=5_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--clock", choices=["cpu", "wall"], default="cpu", help="process CPU time or wall time"
    )
    parser.add_argument("--peers", action="store_true", help="add the installed peer libraries' rows")
    parser.add_argument("--profile", action="store_true", help="print cProfile top entries instead")
    parser.add_argument("--top", type=int, default=20, help="entries shown by --profile")
    args = parser.parse_args()
    global clock
    clock = env_peers.clock = time.process_time if args.clock == "cpu" else time.perf_counter
    if args.profile:
        profile(args.episodes, args.top)
        return
    rows = ROWS + (env_peers.peer_rows() if args.peers else [])
    if args.peers and len(rows) == len(ROWS):
        print("--peers: no peer library is installed (pip install gem-llm skyrl-gym textarena==0.7.4)")
    for _, fn in rows:
        fn(50)  # warm-up
    best = {name: 0.0 for name, _ in rows}
    make_cost = {"make()": float("inf"), "make(**kwargs)": float("inf")}
    # Round-robin, so load from other processes on a shared machine hits every row alike.
    for _ in range(args.rounds):
        for name, fn in rows:
            steps, seconds = fn(args.episodes)
            best[name] = max(best[name], steps / seconds)
        make_cost["make()"] = min(make_cost["make()"], make_only(args.episodes, {}))
        make_cost["make(**kwargs)"] = min(make_cost["make(**kwargs)"], make_only(args.episodes, ROW_KWARGS))
    base, fresh = best["bare python"], best["bare python, new per episode"]
    for name, _ in rows:
        line = f"{name:<30} {best[name]:>12,.0f} steps/s   ratio {best[name] / base:.3f}"
        if "make(" in name:  # every row that builds an env per episode, and only those
            line += f"   ({best[name] / fresh:.3f} of the bare new-per-episode row)"
        if name in GOALS:
            line += f"   (goal >= {GOALS[name]})"
        print(line)
    plain, with_kwargs = make_cost["make()"], make_cost["make(**kwargs)"]
    print(
        f"envs.make alone: make() {plain * 1e6:.2f} us, make(**{ROW_KWARGS}) {with_kwargs * 1e6:.2f} us, "
        f"ratio {with_kwargs / plain:.2f} (goal <= 2)"
    )


if __name__ == "__main__":
    main()
