"""Steps/s of a remote env (`python -m envs serve` on loopback) at concurrency 1/16/64, against the local env.

The episodes are scripted in advance (the expert's replies, taken from a local env), so only `reset` and
`step` are timed. Rows, all measured in this run (wall clock: client and server are two processes):
- local: one `envs.make` env in this process, `step` in a loop (the baseline);
- remote xN: N `RemoteEnv` sessions driven concurrently by `astep` from one event loop, each playing
  episodes back to back (one reset per episode counts as a request too but not as a step).
Ratios are steps/s over the local row. The server runs with its defaults (64 env calls at once).

Run: python bench/remote_env.py [--env guess-number-v0] [--episodes 200] [--concurrency 1 16 64]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

import envs
from tools.loopback_server import spawn_server, stop_server


def scripted_episodes(env_id: str, episodes: int) -> list[tuple[int, list[str]]]:
    """(seed, the expert's replies) for `episodes` seeds, played on a local env."""
    env = envs.make(env_id)
    scripts = []
    for seed in range(episodes):
        env.reset(seed=seed)
        actions = []
        while True:
            action = env.unwrapped.expert_action()
            actions.append(action)
            _, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                break
        scripts.append((seed, actions))
    env.close()
    return scripts


def run_local(env_id: str, scripts) -> float:
    """Steps/s of one local env."""
    env = envs.make(env_id)
    steps, start = 0, time.perf_counter()
    for seed, actions in scripts:
        env.reset(seed=seed)
        for action in actions:
            env.step(action)
            steps += 1
    elapsed = time.perf_counter() - start
    env.close()
    return steps / elapsed


async def run_remote(env_id: str, url: str, scripts, concurrency: int) -> tuple[float, float]:
    """(steps/s, median step latency in ms) of `concurrency` sessions sharing the scripted episodes."""
    sessions = [await asyncio.to_thread(envs.make, env_id, remote=url) for _ in range(concurrency)]
    queue: asyncio.Queue = asyncio.Queue()
    for item in scripts:
        queue.put_nowait(item)
    latencies: list[float] = []

    async def worker(env) -> int:
        steps = 0
        while not queue.empty():
            seed, actions = queue.get_nowait()
            await asyncio.to_thread(env.reset, seed=seed)
            for action in actions:
                t0 = time.perf_counter()
                await env.astep(action)
                latencies.append(time.perf_counter() - t0)
                steps += 1
        return steps

    start = time.perf_counter()
    steps = sum(await asyncio.gather(*(worker(env) for env in sessions)))
    elapsed = time.perf_counter() - start
    for env in sessions:
        await asyncio.to_thread(env.close)
    return steps / elapsed, 1000 * statistics.median(latencies)


def main() -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="guess-number-v0")
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 16, 64])
    args = parser.parse_args()
    scripts = scripted_episodes(args.env, args.episodes)
    url, proc = spawn_server(["-m", "envs", "serve"])
    try:
        local = run_local(args.env, scripts)
        print(f"{args.env}: {sum(len(a) for _, a in scripts)} steps in {len(scripts)} episodes, loopback")
        print(f"{'mode':<12} {'steps/s':>9} {'vs local':>9} {'p50 step ms':>12}")
        print(f"{'local':<12} {local:>9.0f} {1.0:>9.3f} {1000 / local:>12.2f}")
        for c in args.concurrency:
            rate, p50 = asyncio.run(run_remote(args.env, url, scripts, c))
            print(f"{f'remote x{c}':<12} {rate:>9.0f} {rate / local:>9.3f} {p50:>12.2f}")
    finally:
        stop_server(proc)


if __name__ == "__main__":
    main()
