"""Sandbox latency and throughput: `print(1+1)` through LocalSandbox (bwrap / rlimits only) and the
`/run_code` server, beside a plain `python -c` subprocess measured in the same run.

Usage: .venv/bin/python bench/sandbox.py [--n 40]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tools.sandbox import FusionSandbox, LocalSandbox  # noqa: E402
from tools.sandbox.isolation import bwrap_path  # noqa: E402

CODE = "print(1+1)"


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def timed_interleaved(fns: list, n: int) -> list[list[float]]:
    """Round-robin over the paths so a change in machine load hits all of them alike."""
    for fn in fns:
        fn()  # warm-up
    out: list[list[float]] = [[] for _ in fns]
    for _ in range(n):
        for i, fn in enumerate(fns):
            t = time.perf_counter()
            fn()
            out[i].append((time.perf_counter() - t) * 1000)
    return out


def throughput(run_async, concurrency: int, total: int) -> float:
    async def main():
        sem = asyncio.Semaphore(concurrency)

        async def one():
            async with sem:
                await run_async()

        t = time.perf_counter()
        await asyncio.gather(*(one() for _ in range(total)))
        return total / (time.perf_counter() - t)

    return asyncio.run(main())


def plain_async(python: str):
    async def run():
        proc = await asyncio.create_subprocess_exec(
            python, "-c", CODE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        await proc.communicate()

    return run


def start_server(port: int) -> subprocess.Popen:
    import httpx

    proc = subprocess.Popen(
        [sys.executable, "-m", "tools.sandbox.serve", "--port", str(port), "--max-concurrency", "16"],
        cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for _ in range(200):
        try:
            httpx.get(f"http://127.0.0.1:{port}/health", timeout=1)
            return proc
        except httpx.TransportError:
            time.sleep(0.05)
    raise RuntimeError("server did not start")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=40)
    args = parser.parse_args()
    n = args.n

    local_bwrap = LocalSandbox(isolation="bwrap") if bwrap_path() else None
    local_plain = LocalSandbox(isolation="none")
    python = local_plain.python
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = start_server(port)
    fusion = FusionSandbox(f"http://127.0.0.1:{port}")

    rows = [
        ("plain `python -c` (baseline)", lambda: subprocess.run([python, "-c", CODE], capture_output=True))
    ]
    rows.append(
        (
            "plain `python -I -S -c`",
            lambda: subprocess.run([python, "-I", "-S", "-c", CODE], capture_output=True),
        )
    )
    if local_bwrap:
        rows.append(("LocalSandbox bwrap+uid+rlimits", lambda: local_bwrap.run(CODE)))
    rows.append(("LocalSandbox uid+rlimits (no bwrap)", lambda: local_plain.run(CODE)))
    rows.append(("/run_code server (FusionSandbox)", lambda: fusion.run(CODE)))

    print(f"latency of print(1+1), {n} runs each (interleaved), python={python}, cpus={os.cpu_count()}")
    print(f"{'path':40s} {'p50 ms':>8s} {'p95 ms':>8s} {'p50 ratio':>10s}")
    base = None
    try:
        samples = timed_interleaved([fn for _, fn in rows], n)
        for (name, _), xs in zip(rows, samples, strict=True):
            p50, p95 = statistics.median(xs), pct(xs, 0.95)
            base = base or p50
            print(f"{name:40s} {p50:8.1f} {p95:8.1f} {p50 / base:9.2f}x")

        print("\nthroughput (runs/s)")
        targets = [("plain `python -c`", plain_async(python))]
        if local_bwrap:
            targets.append(("LocalSandbox bwrap", lambda: local_bwrap.arun(CODE)))
        targets.append(("LocalSandbox no bwrap", lambda: local_plain.arun(CODE)))
        targets.append(("/run_code server", lambda: fusion.arun(CODE)))
        print(
            f"{'path':28s} "
            + " ".join(f"{'c=' + str(c):>8s}" for c in (1, 4, 16))
            + "   ratio vs plain at c=1/4/16"
        )
        base_tp = None
        for name, run in targets:
            tps = [throughput(run, c, max(2 * n, 4 * c)) for c in (1, 4, 16)]
            base_tp = base_tp or tps
            ratios = "/".join(f"{t / b:.2f}" for t, b in zip(tps, base_tp, strict=True))
            print(f"{name:28s} " + " ".join(f"{t:8.1f}" for t in tps) + f"   {ratios}")
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
