"""No tool, built-in or user-written, holds the event loop past its timeout.

The attack: a user's tool written as `async def run` that computes (here a CPU-bound loop). Each stretch
of an async run between awaits runs on the loop, so every other episode waited, and `wait_for`'s
timeout could not fire until the stretch ended. A plain `def run` went to a worker thread whose
computing went on after the call had timed out.
"""

from __future__ import annotations

import asyncio
import logging
import time

import pydantic

from tools import Tool, tool
from tools.loop_watch import blocking_report, reset_report

SPIN_S = 20.0


class Spin(Tool):
    """An async tool that computes for SPIN_S seconds without awaiting."""

    name = "spin"
    description = "Busy loop."
    timeout_s = 0.5

    class Args(pydantic.BaseModel):
        pass

    def __init__(self) -> None:
        self.counter = 0

    async def run(self, args, context):
        end = time.monotonic() + SPIN_S
        while time.monotonic() < end:
            self.counter += 1
        return "done"


class Blip(Tool):
    """An async tool that blocks a little (0.3 s), under its timeout: measured and warned about."""

    name = "blip"
    description = "Short busy loop."
    timeout_s = 5.0

    async def run(self, args, context):
        end = time.thread_time() + 0.3  # 0.3 s of computing, however busy the machine
        while time.thread_time() < end:
            pass
        await asyncio.sleep(0)
        return "ok"


def _call_with_heartbeat(t: Tool, arguments: dict) -> tuple:
    async def scenario():
        beats = 0

        async def heartbeat():
            nonlocal beats
            while True:
                await asyncio.sleep(0.01)
                beats += 1

        ticker = asyncio.create_task(heartbeat())
        await asyncio.sleep(0.05)
        started = beats
        result = await t.call(arguments)
        await asyncio.sleep(0.2)  # the loop is free again
        after = beats
        ticker.cancel()
        return result, started, after

    return asyncio.run(scenario())


def test_an_async_tool_that_computes_is_stopped_at_its_timeout_and_the_loop_goes_on():
    reset_report()
    spin = Spin()
    result, _, after = _call_with_heartbeat(spin, {})
    assert result.is_error and "timed out after 0.5s" in result.content, result
    assert result.metrics["loop_blocked_s"] >= 0.5
    stopped_at = spin.counter
    time.sleep(0.3)
    assert spin.counter == stopped_at, "the tool's loop is still running"
    assert blocking_report()["spin"]["calls"] == 1 and after > 5


def test_a_blocking_async_tool_is_warned_about_once_and_measured(caplog):
    reset_report()
    blip = Blip()
    with caplog.at_level(logging.WARNING, logger="tools.loop_watch"):
        first = blip.call_sync({})
        second = blip.call_sync({})
    assert first.content == "ok" and second.content == "ok"
    assert first.metrics["loop_blocked_s"] >= 0.3 and second.metrics["loop_blocked_s"] >= 0.3
    warnings = [r.getMessage() for r in caplog.records if "blip" in r.getMessage()]
    assert len(warnings) == 1 and "plain def" in warnings[0] and "\n" not in warnings[0]
    report = blocking_report()["blip"]
    assert report["calls"] == 2 and report["max_s"] >= 0.3


def test_a_sync_tool_thread_stops_computing_at_its_timeout():
    state = {"counter": 0}

    @tool(timeout_s=0.5)
    def grind() -> str:
        """Busy loop in a worker thread."""
        end = time.monotonic() + SPIN_S
        while time.monotonic() < end:
            state["counter"] += 1
        return "done"

    async def scenario():
        result = await grind.call({})
        # Still inside the loop: asyncio.run would otherwise wait for the worker thread at shutdown.
        await asyncio.sleep(0.3)
        stopped_at = state["counter"]
        await asyncio.sleep(0.3)
        return result, stopped_at, state["counter"]

    result, stopped_at, later = asyncio.run(scenario())
    assert result.is_error and "timed out" in result.content
    assert later == stopped_at, "the worker thread is still computing after its call timed out"


def test_well_behaved_tools_are_not_measured():
    reset_report()

    @tool
    async def quick(x: int) -> int:
        """Add one."""
        await asyncio.sleep(0.01)
        return x + 1

    result = quick.call_sync({"x": 1})
    assert result.content == "2" and "loop_blocked_s" not in result.metrics
    assert blocking_report() == {}
