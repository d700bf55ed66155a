"""Sandbox latency and throughput: `print(1+1)` through LocalSandbox (full limits; as configured before
the per-run limits; no isolation) and the `/run_code` server, beside a plain `python -c` subprocess, all
measured in the same run. The line "full limits vs before" is the cost of the per-run cgroup, seccomp,
--disable-userns and the tmpfs work dir (budget: 1.20x); "full limits vs bare bwrap" compares the whole
sandbox with a bare `bwrap --unshare-all --ro-bind / / ... python -c` of the same snippet (goal: 1.20x);
the sandbox starts Python with -I -S, so the bare run with those flags too is printed beside it.
"Full limits" runs find a spare (cgroup + parked launcher made between calls, as in a rollout where
tool calls are separated by generation); "no spare" is the same sandbox making its own, as a burst of
more concurrent runs than spares does.

Usage: .venv/bin/python bench/sandbox.py [--n 40]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tools.sandbox import FusionSandbox, LocalSandbox  # noqa: E402
from tools.sandbox.deferred import flush  # noqa: E402
from tools.sandbox.isolation import bwrap_argv, bwrap_path  # noqa: E402
from tools.sandbox.serve import spawn_server  # noqa: E402
from turngym.serving.loopback_server import stop_server  # noqa: E402

CODE = "print(1+1)"


class BeforeLimits(LocalSandbox):
    """The baseline: LocalSandbox as it was before per-run limits (bwrap + private uid + rlimits; no
    cgroup, seccomp filter, --disable-userns or tmpfs work dir). Its /dev/shm cap is the one extra mount."""

    def __init__(self, **kwargs) -> None:
        super().__init__(cgroups=False, **kwargs)

    def _command(self, argv: list[str], workdir: str) -> tuple[list[str], str]:
        return bwrap_argv(self.bwrap, workdir, argv, self._extra_ro, hardened=False), workdir

    def _workdir_size_mb(self) -> int | None:
        return None


class NoSpares(LocalSandbox):
    """Full limits without a spare run: the run makes its own cgroup and launcher, which joins the group
    on the critical path (what a burst of more runs than spares gets)."""

    def _spare_kind(self, memory: int) -> None:
        return None


def bare_bwrap_argv(exe: str, python: str, *flags: str) -> list[str]:
    """The least a bubblewrap run of the snippet needs: every namespace, the host root read-only."""
    return [exe, "--unshare-all", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev"] + [
        python,
        *flags,
        "-c",
        CODE,
    ]


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def timed_interleaved(fns: list, n: int) -> list[list[float]]:
    """Round-robin over the paths so a change in machine load hits all of them alike. After each call,
    untimed, this process's sandbox housekeeping (teardown, spares) finishes, so it never runs inside
    another path's timing."""
    for fn in fns:
        fn()  # warm-up
    flush()
    out: list[list[float]] = [[] for _ in fns]
    for _ in range(n):
        for i, fn in enumerate(fns):
            t = time.perf_counter()
            fn()
            out[i].append((time.perf_counter() - t) * 1000)
            flush()
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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=40)
    args = parser.parse_args()
    n = args.n

    local_bwrap = LocalSandbox(isolation="bwrap") if bwrap_path() else None
    local_before = BeforeLimits(isolation="bwrap") if local_bwrap else None
    local_cold = NoSpares(isolation="bwrap") if local_bwrap else None
    local_plain = LocalSandbox(isolation="none")
    python = local_plain.python
    url, server = spawn_server("--max-concurrency", "16")
    fusion = FusionSandbox(url)

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
        bare = bare_bwrap_argv(local_bwrap.bwrap, python)
        bare_is = bare_bwrap_argv(local_bwrap.bwrap, python, "-I", "-S")
        rows.append(
            ("bare `bwrap --unshare-all` python -c", lambda: subprocess.run(bare, capture_output=True))
        )
        rows.append(
            (
                "bare `bwrap --unshare-all` python -I -S -c",
                lambda: subprocess.run(bare_is, capture_output=True),
            )
        )
        rows.append(("LocalSandbox before (bwrap+uid+rlimits)", lambda: local_before.run(CODE)))
        rows.append(("LocalSandbox full limits", lambda: local_bwrap.run(CODE)))
        rows.append(("LocalSandbox full limits, no spare", lambda: local_cold.run(CODE)))
    rows.append(("LocalSandbox isolation=none", lambda: local_plain.run(CODE)))
    rows.append(("/run_code server (FusionSandbox)", lambda: fusion.run(CODE)))

    print(f"latency of print(1+1), {n} runs each (interleaved), python={python}, cpus={os.cpu_count()}")
    print(f"{'path':44s} {'p50 ms':>8s} {'p95 ms':>8s} {'p50 ratio':>10s}")
    base = None
    try:
        samples = timed_interleaved([fn for _, fn in rows], n)
        p50s = {}
        for (name, _), xs in zip(rows, samples, strict=True):
            p50, p95 = statistics.median(xs), pct(xs, 0.95)
            p50s[name] = p50
            base = base or p50
            print(f"{name:44s} {p50:8.1f} {p95:8.1f} {p50 / base:9.2f}x")
        if local_bwrap:
            before, full = p50s["LocalSandbox before (bwrap+uid+rlimits)"], p50s["LocalSandbox full limits"]
            bare_p50 = p50s["bare `bwrap --unshare-all` python -c"]
            print(
                f"\nfull limits vs before: p50 {full:.1f} / {before:.1f} ms = {full / before:.2f}x (budget 1.20x)"
            )
            print(
                f"full limits vs bare bwrap: p50 {full:.1f} / {bare_p50:.1f} ms = {full / bare_p50:.2f}x "
                "(goal 1.20x)"
            )
            bare_is_p50 = p50s["bare `bwrap --unshare-all` python -I -S -c"]
            print(
                f"full limits vs bare bwrap with the sandbox's -I -S: p50 {full:.1f} / {bare_is_p50:.1f} ms = "
                f"{full / bare_is_p50:.2f}x (isolation and limits alone)"
            )
            cold = p50s["LocalSandbox full limits, no spare"]
            print(
                f"full limits without a spare vs bare bwrap: p50 {cold:.1f} / {bare_p50:.1f} ms = "
                f"{cold / bare_p50:.2f}x (the cgroup join on the critical path)"
            )
            print("limits that hold:")
            for key, text in local_bwrap.limits_report().items():
                print(f"  {key}: {text}")

        print("\nthroughput (runs/s)")
        targets = [("plain `python -c`", plain_async(python))]
        if local_bwrap:
            targets.append(("LocalSandbox before", lambda: local_before.arun(CODE)))
            targets.append(("LocalSandbox full limits", lambda: local_bwrap.arun(CODE)))
        targets.append(("LocalSandbox none", lambda: local_plain.arun(CODE)))
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
        stop_server(server)


if __name__ == "__main__":
    main()
