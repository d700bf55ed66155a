"""Served envs: steps/s and step latency for 1, 2 and 4 server workers at concurrency 1/16/64, against local play.

All rows are measured in this run, on loopback (client and servers are processes of this machine: the
figures depend on its cores and on what else runs; the header prints the load):
- local: one `envs.make` env in this process, `step` in a loop (the baseline of the ratios);
- workers W, concurrency C: `python -m envs serve --workers W` (W=1: the plain server, no front), and C
  `RemoteEnv` sessions driven by `astep`, spread over `--clients` client processes (one event loop each,
  so the client is not what saturates first), each session playing scripted episodes back to back.
  Episodes are scripted in advance (the expert's replies, from a local env), so only `reset`/`step` run.
  p50/p99 are per-step latencies seen by the client.
- front cost: a fresh connection's `GET /health` through the plain server and through the front of
  `--workers 2` (the front's work is per connection: accept, peek, pass the socket to a worker).
- env wait: one collect of embedded-model episodes (HFEngine, the embedded default's guess-number and
  per-turn cap) with local envs, one server, and a pool of two servers: wall time, and the share of the
  episodes' time spent waiting on the env (sum of env time over sum of episode time).

Run: python bench/remote_env.py [--env guess-number-v0] [--episodes 300] [--workers 1 2 4]
     [--concurrency 1 16 64] [--clients 2] [--collect-episodes 32]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import statistics
import time

import envs
from turngym.serving.loopback_server import spawn_server, stop_server


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


async def _drive(env_id: str, url: str, scripts, sessions: int, barrier) -> tuple[int, list[float], float]:
    made = [await asyncio.to_thread(envs.make, env_id, remote=url) for _ in range(sessions)]
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

    # Untimed: each session's first async request builds its HTTP client (an SSL context, tens of ms).
    first_seed, first_actions = scripts[0]
    for env in made:
        await asyncio.to_thread(env.reset, seed=first_seed)
        await env.astep(first_actions[0])
    await asyncio.to_thread(barrier.wait)
    start = time.perf_counter()
    steps = sum(await asyncio.gather(*(worker(env) for env in made)))
    elapsed = time.perf_counter() - start
    for env in made:
        await asyncio.to_thread(env.close)
    return steps, latencies, elapsed


def _client(env_id: str, url: str, scripts, sessions: int, barrier, results) -> None:
    results.put(asyncio.run(_drive(env_id, url, scripts, sessions, barrier)))


def run_remote(env_id: str, url: str, scripts, concurrency: int, clients: int) -> tuple[float, float, float]:
    """(steps/s, p50 ms, p99 ms) of `concurrency` sessions over `clients` client processes."""
    clients = max(1, min(clients, concurrency))
    ctx = multiprocessing.get_context("fork")
    barrier, results = ctx.Barrier(clients), ctx.Queue()
    shares = [scripts[i::clients] for i in range(clients)]
    sizes = [concurrency // clients + (i < concurrency % clients) for i in range(clients)]
    procs = [
        ctx.Process(target=_client, args=(env_id, url, share, size, barrier, results))
        for share, size in zip(shares, sizes, strict=True)
    ]
    for proc in procs:
        proc.start()
    outs = [results.get(timeout=600) for _ in procs]
    for proc in procs:
        proc.join()
    steps = sum(o[0] for o in outs)
    latencies = sorted(x for o in outs for x in o[1])
    elapsed = max(o[2] for o in outs)
    p99 = latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))]
    return steps / elapsed, 1000 * statistics.median(latencies), 1000 * p99


def fresh_connection_ms(url: str, n: int = 300) -> float:
    """Median ms of `GET /health` on a new TCP connection each time (a raw socket: no client library cost)."""
    import socket

    host, port = url.rsplit("/", 1)[-1].rsplit(":", 1)
    request = f"GET /health HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode()
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        with socket.create_connection((host, int(port))) as conn:
            conn.sendall(request)
            while conn.recv(65536):
                pass
        times.append(time.perf_counter() - t0)
    return 1000 * statistics.median(times)


def collect_env_wait(env_id: str, make_env, episodes: int) -> tuple[float, float, int]:
    """(collect wall s, share of episode time waiting on the env, failed episodes) with the embedded model."""
    from rollout.collection import acollect
    from rollout.episode import EpisodeConfig
    from rollout.episode_budgets import EMBEDDED_MODEL_BUDGETS as budgets
    from turngym.engines.hf_engine import HFEngine

    engine = _ENGINE.get("engine") or _ENGINE.setdefault("engine", HFEngine(max_batch_size=episodes, seed=0))
    cfg = EpisodeConfig(
        max_new_tokens=budgets.max_new_tokens,
        max_response_tokens=budgets.max_response_tokens,
        max_turns=budgets.max_turns,
    )
    source = make_env if make_env is not None else env_id
    t0 = time.perf_counter()
    trajs = asyncio.run(
        acollect(
            source,
            engine,
            engine.tokenizer,
            episodes,
            concurrency=episodes,
            sampling_params={"temperature": 1.0},
            config=cfg,
        )
    )
    wall = time.perf_counter() - t0
    env_s = sum(t.metrics["env_s"] for t in trajs)
    episode_s = sum(t.metrics["wall_s"] for t in trajs)
    return wall, env_s / episode_s, episodes - len(trajs)


_ENGINE: dict = {}


def main() -> None:
    """Print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="guess-number-v0")
    parser.add_argument("--episodes", type=int, default=300)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 16, 64])
    parser.add_argument("--clients", type=int, default=2, help="client processes sharing the sessions")
    parser.add_argument("--collect-episodes", type=int, default=32, help="0 skips the env-wait table")
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    scripts = scripted_episodes(args.env, args.episodes)
    steps = sum(len(a) for _, a in scripts)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"{args.env}: {steps} steps in {len(scripts)} episodes, loopback, {os.cpu_count()} cores, load {load}"
    )
    local = run_local(args.env, scripts)
    print("\n| server | concurrency | steps/s | vs local | p50 step ms | p99 step ms |")
    print("|---|---|---|---|---|---|")
    print(f"| local (in process) | 1 | {local:.0f} | 1.00 | {1000 / local:.2f} | |")
    front = {}
    for workers in args.workers:
        flags = ["--workers", str(workers)] if workers > 1 else []
        url, proc = spawn_server(["-m", "envs", "serve", *flags])
        try:
            for c in args.concurrency:
                rate, p50, p99 = run_remote(args.env, url, scripts, c, args.clients)
                name = f"{workers} worker{'s' if workers > 1 else ''}"
                print(
                    f"| {name} | {c} | {rate:.0f} | {rate / local:.3f} | {p50:.2f} | {p99:.2f} |", flush=True
                )
            if workers <= 2:
                front[workers] = fresh_connection_ms(url)
        finally:
            stop_server(proc)
    if 1 in front and 2 in front:
        print("\n| new connection + GET /health | median ms |")
        print("|---|---|")
        print(f"| plain server | {front[1]:.2f} |")
        print(f"| front of --workers 2 | {front[2]:.2f} (+{front[2] - front[1]:.2f}) |")
    if args.collect_episodes:
        servers = [spawn_server(["-m", "envs", "serve"]) for _ in range(2)]
        urls = [url for url, _ in servers]
        try:
            rows = [
                ("local envs", None),
                ("1 server", lambda: envs.make(args.env, remote=urls[0])),
                ("pool of 2 servers", lambda: envs.make(args.env, remote=urls)),
            ]
            collect_env_wait(args.env, None, 4)  # warm-up: the engine's first batches
            print(
                f"\n| {args.collect_episodes} embedded-model episodes | collect wall s | env wait share | failed |"
            )
            print("|---|---|---|---|")
            base = None
            for name, make in rows:
                wall, share, failed = collect_env_wait(args.env, make, args.collect_episodes)
                base = base or wall
                print(
                    f"| {name} | {wall:.2f} ({wall / base:.2f}x) | {100 * share:.2f} % | {failed} |",
                    flush=True,
                )
        finally:
            for _, proc in servers:
                stop_server(proc)


if __name__ == "__main__":
    main()
