"""The `/run_code` server under load and faults: 64 concurrent runs plus 12 clients that disconnect
mid-run, against one run alone measured in the same session.

Prints how many requests were refused clearly (429/503 with Retry-After) and how fast, how many
finished, how the disconnected clients' runs ended, and how many sandbox processes are still alive
2 s after the last response (goal 0). A second phase sends the same 64 runs through FusionSandbox,
which waits out 429s, so every run finishes.

Usage: .venv/bin/python bench/sandbox_server.py [--concurrency 8] [--queue 16] [--runs 64] [--leavers 12]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import httpx  # noqa: E402

from tools.sandbox import FusionSandbox  # noqa: E402
from tools.sandbox.serve import spawn_server  # noqa: E402
from turngym.serving.loopback_server import stop_server  # noqa: E402

UID_BASE, UID_COUNT = 380000, 128  # private uid range: only this server's sandboxes are counted
WORK = "print(sum(range(300_000)))"
HANG = "while True: pass"


def live_sandbox_processes() -> int:
    """Non-zombie processes running as one of this bench's sandbox uids."""
    count = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            if not UID_BASE <= entry.stat().st_uid < UID_BASE + UID_COUNT:
                continue
            with open(f"{entry.path}/stat", "rb") as fh:
                if fh.read().rsplit(b")", 1)[1].split()[0] in (b"Z", b"X"):
                    continue
        except (OSError, IndexError):
            continue
        count += 1
    return count


async def storm(url: str, runs: int, leavers: int) -> dict:
    """`leavers` hanging requests whose clients give up after 1 s, then `runs` normal ones at once."""
    out = {"finished": 0, "refused": 0, "other": 0, "left": 0, "leaver_refused": 0}
    refuse_ms: list[float] = []
    done_ms: list[float] = []
    last = [0.0]

    async def normal(client: httpx.AsyncClient):
        t = time.perf_counter()
        r = await client.post(f"{url}/run_code", json={"code": WORK})
        ms = (time.perf_counter() - t) * 1000
        last[0] = time.perf_counter()
        if r.status_code in (429, 503) and "retry-after" in r.headers:
            out["refused"] += 1
            refuse_ms.append(ms)
        elif r.status_code == 200 and r.json()["status"] == "Success":
            out["finished"] += 1
            done_ms.append(ms)
        else:
            out["other"] += 1

    async def leaver():
        async with httpx.AsyncClient(timeout=httpx.Timeout(1.0)) as own:  # own connection to drop
            try:
                r = await own.post(f"{url}/run_code", json={"code": HANG, "run_timeout": 60})
            except httpx.ReadTimeout:
                out["left"] += 1
            else:
                out["leaver_refused" if r.status_code in (429, 503) else "other"] += 1
            last[0] = time.perf_counter()

    limits = httpx.Limits(max_connections=runs + 8)
    async with httpx.AsyncClient(timeout=120, limits=limits) as client:
        # Leavers go first so they hold slots (running and queued) when they drop; then the burst.
        left = [asyncio.ensure_future(leaver()) for _ in range(leavers)]
        deadline = time.perf_counter() + 5
        while time.perf_counter() < deadline:
            health = (await client.get(f"{url}/health")).json()
            if health["running"] + health["waiting"] >= leavers or all(j.done() for j in left):
                break
            await asyncio.sleep(0.02)
        await asyncio.gather(*(normal(client) for _ in range(runs)), *left)
    out["refuse_ms_max"] = max(refuse_ms) if refuse_ms else float("nan")
    out["done_ms_p50"] = statistics.median(done_ms) if done_ms else float("nan")
    out["done_ms_max"] = max(done_ms) if done_ms else float("nan")
    out["last"] = last[0]
    return out


async def through_fusion(url: str, runs: int) -> tuple[int, float]:
    """The same burst through FusionSandbox (it waits out 429s): (finished ok, seconds)."""
    fs = FusionSandbox(url)
    t = time.perf_counter()
    results = await asyncio.gather(*(fs.arun(WORK) for _ in range(runs)))
    return sum(r.ok for r in results), time.perf_counter() - t


def main() -> None:
    """Run the bench and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--queue", type=int, default=16)
    parser.add_argument("--runs", type=int, default=64)
    parser.add_argument("--leavers", type=int, default=12)
    args = parser.parse_args()
    env = {"TURNGYM_SANDBOX_UID_BASE": str(UID_BASE), "TURNGYM_SANDBOX_UID_COUNT": str(UID_COUNT)}
    url, proc = spawn_server("--concurrency", str(args.concurrency), "--queue", str(args.queue), env=env)
    try:
        fs = FusionSandbox(url)
        fs.run(WORK)  # warm-up
        alone = []
        for _ in range(5):
            t = time.perf_counter()
            assert fs.run(WORK).ok
            alone.append((time.perf_counter() - t) * 1000)
        baseline = statistics.median(alone)

        s = asyncio.run(storm(url, args.runs, args.leavers))
        wait = 2.0 - (time.perf_counter() - s["last"])
        if wait > 0:
            time.sleep(wait)
        alive = live_sandbox_processes()
        health = httpx.get(f"{url}/health").json()
        ok, seconds = asyncio.run(through_fusion(url, args.runs))

        print(
            f"server: concurrency {args.concurrency}, queue {args.queue}, isolation {health['isolation']}; "
            f"burst: {args.runs} runs of {WORK!r} + {args.leavers} clients leaving a {HANG!r} after 1 s"
        )
        print(f"one run alone (median of 5):      {baseline:7.1f} ms")
        print(
            f"refused clearly (429 + Retry-After): {s['refused']:3d} / {args.runs}"
            f"   slowest refusal {s['refuse_ms_max']:7.1f} ms ({s['refuse_ms_max'] / baseline:.2f}x one run)"
        )
        print(
            f"finished (Success):                 {s['finished']:3d} / {args.runs}"
            f"   p50 {s['done_ms_p50']:7.1f} ms ({s['done_ms_p50'] / baseline:.1f}x), "
            f"max {s['done_ms_max']:7.1f} ms ({s['done_ms_max'] / baseline:.1f}x)"
        )
        print(f"other answers:                      {s['other']:3d}")
        print(
            f"leavers: {s['left']} left while running or queued, {s['leaver_refused']} refused at once; "
            f"server counted {health['cancelled']} cancelled"
        )
        print(f"sandbox processes alive 2 s after the last response: {alive}  (goal 0)")
        print(
            f"through FusionSandbox (waits out 429s): {ok} / {args.runs} ok in {seconds:.2f} s "
            f"({seconds * 1000 / args.runs / baseline:.2f}x one run alone per run)"
        )
    finally:
        stop_server(proc)


if __name__ == "__main__":
    main()
