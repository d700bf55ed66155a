"""Issue 45, item 6: tool worker processes have a cap of their own, per server, independent of
`--max-concurrency`. Before, every calculator call that found no idle worker started one: 8 concurrent
steps of 8 calls had 48 workers alive at once (589 MB), and `--max-concurrency 64` would have allowed 512.
The processes are counted in /proc: real workers of a real pool, and of a real `python -m envs serve`.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx

from tools.builtin import arithmetic
from tools.killable_worker import WorkerBusy, WorkerPool
from turngym.serving.loopback_server import spawn_server, stop_server

SLOW = "round(1/3, 10**7)"  # minutes of work: it holds its worker until the call's deadline kills it


def _worker_pids(parent: int) -> set[int]:
    """The calculator workers `parent` has alive now."""
    pids = set()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                is_worker = b"arithmetic.py" in f.read()
        except (OSError, ValueError, IndexError):
            continue
        if ppid == parent and is_worker:
            pids.add(int(pid))
    return pids


class PeakWorkers:
    """The most workers `parent` had alive at once while the block ran (sampled every 20 ms).

    Workers alive before the block belong to other pools of the same process (earlier tests in a full
    run keep idle ones): they are not counted.
    """

    def __init__(self, parent: int):
        self.parent, self.peak = parent, 0
        self.before = _worker_pids(parent)
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._done.is_set():
            self.peak = max(self.peak, len(_worker_pids(self.parent) - self.before))
            time.sleep(0.02)

    def __enter__(self) -> PeakWorkers:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._done.set()
        self._thread.join()


def _pool(cap: int) -> WorkerPool:
    return WorkerPool(os.path.abspath(arithmetic.__file__), max_workers=cap)


def test_calls_past_the_cap_wait_for_a_worker_and_are_answered():
    pool = _pool(2)

    async def many():
        calls = [pool.arun({"expression": f"6 * {i}"}, 120) for i in range(10)]
        return await asyncio.gather(*calls)

    try:
        with PeakWorkers(os.getpid()) as seen:
            answers = asyncio.run(many())
            with ThreadPoolExecutor(6) as threads:  # the blocking door shares the same cap
                blocking = list(threads.map(lambda i: pool.run({"expression": f"7 * {i}"}, 120), range(6)))
    finally:
        pool.close()
    assert [a["text"] for a in answers] == [str(6 * i) for i in range(10)]
    assert [a["text"] for a in blocking] == [str(7 * i) for i in range(6)]
    assert 1 <= seen.peak <= 2, f"{seen.peak} workers alive at once; the cap is 2"
    assert pool.alive == 0


def test_slow_calls_past_the_cap_are_refused_at_their_deadline_without_a_worker():
    pool = _pool(3)

    async def many():
        calls = [pool.arun({"expression": SLOW}, 3.0) for _ in range(12)]
        return await asyncio.gather(*calls, return_exceptions=True)

    try:
        with PeakWorkers(os.getpid()) as seen:
            outcomes = asyncio.run(many())
    finally:
        pool.close()
    assert all(isinstance(o, TimeoutError) for o in outcomes), outcomes
    busy = [o for o in outcomes if isinstance(o, WorkerBusy)]
    # Which calls get a worker freed by a killed one depends on timing; some never do.
    assert busy and "all 3 worker processes stayed busy for 3 s" in str(busy[0])
    assert seen.peak <= 3, f"{seen.peak} workers alive at once; the cap is 3"
    assert pool.alive == 0 and not _worker_pids(os.getpid()) - seen.before


def test_a_served_env_keeps_its_calculator_workers_under_its_own_cap():
    # The attack: 8 concurrent steps of 8 calculator calls each, every call a slow expression.
    url, proc = spawn_server(
        ["-m", "envs", "serve", "--max-concurrency", "64"], env={"TURNGYM_TOOL_WORKERS": "3"}
    )
    call = f'<tool_call>{{"name": "calculator", "arguments": {{"expression": "{SLOW}"}}}}</tool_call>'

    def episode(_: int) -> list[str]:
        with httpx.Client(base_url=url, timeout=300) as client:
            sid = client.post("/v1/sessions", json={"env_id": "calculator-qa-v0"}).json()["session_id"]
            assert client.post(f"/v1/sessions/{sid}/reset", json={"seed": 0}).status_code == 200
            step = client.post(f"/v1/sessions/{sid}/step", json={"action": "\n".join([call] * 8)})
            assert step.status_code == 200, step.text
            return [m["content"] for m in step.json()["observation"]["messages"] if m.get("role") == "tool"]

    try:
        with PeakWorkers(proc.pid) as seen, ThreadPoolExecutor(8) as steps:
            answers = [a for step in steps.map(episode, range(8)) for a in step]
    finally:
        stop_server(proc)
    assert seen.peak <= 3, f"the server had {seen.peak} calculator workers alive at once; its cap is 3"
    assert answers and all(a.startswith("calculator: ") or "timed out" in a for a in answers), answers[:3]
    assert any("stayed busy" in a for a in answers), answers[:3]
