"""Wall time of one turn of N tool calls: calls to a `concurrent` tool against the same tool run one by one.

Rows, measured in one run, interleaved (best of `--rounds`):
- waiting tool, one by one: N calls that each wait `--wait` seconds (an I/O-bound tool: a search server,
  a sandbox run), the tool not marked concurrent: the baseline;
- waiting tool, concurrent: the same calls, the tool marked `concurrent = True` (they run together);
- calculator, one by one / concurrent: N calls to the built-in calculator (CPU-bound, microseconds):
  what running calls together costs when there is nothing to wait for.
Ratios are the baseline's time over the row's (above 1: faster). Wall time: the waiting is the point.

Run: python bench/tool_turn.py [--calls N] [--wait S] [--rounds R]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

# The checkout this script is in, not whichever one is installed.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import envs  # noqa: E402
from tools import Tool  # noqa: E402
from tools.builtin.calculator import Calculator  # noqa: E402


class Wait(Tool):
    """Waits on the event loop, as an I/O-bound tool does."""

    name = "wait"
    description = "Wait a moment."

    def __init__(self, seconds: float, concurrent: bool):
        self.seconds, self.concurrent = seconds, concurrent

    async def run(self, args, context):
        await asyncio.sleep(self.seconds)
        return "waited"


class SerialCalculator(Calculator):
    """The built-in calculator, not marked concurrent."""

    concurrent = False


def turn_seconds(tool: Tool, calls: int, arguments: dict) -> float:
    """Wall seconds of one `astep` whose reply makes `calls` calls to `tool`."""
    env = envs.make("guess-number-v0", tools=[tool], max_tool_calls_per_turn=calls)
    env.reset(seed=0)
    action = {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": f"c{i}", "name": tool.name, "arguments": arguments} for i in range(calls)],
    }

    async def one_turn() -> float:
        start = time.perf_counter()
        await env.astep(action)
        return time.perf_counter() - start

    seconds = asyncio.run(one_turn())
    env.close()
    return seconds


def main() -> None:
    """Print the rows."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=4)
    parser.add_argument("--wait", type=float, default=0.2)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    expression = {"expression": "(2**61 - 1) * 12345 // 7"}
    rows = {
        "waiting tool, one by one": lambda: turn_seconds(Wait(args.wait, False), args.calls, {}),
        "waiting tool, concurrent": lambda: turn_seconds(Wait(args.wait, True), args.calls, {}),
        "calculator, one by one": lambda: turn_seconds(SerialCalculator(), args.calls, expression),
        "calculator, concurrent": lambda: turn_seconds(Calculator(), args.calls, expression),
    }
    best = {name: float("inf") for name in rows}
    for _ in range(args.rounds):
        for name, row in rows.items():
            best[name] = min(best[name], row())
    print(f"one turn of {args.calls} tool calls (best of {args.rounds}, wall time)")
    for name, seconds in best.items():
        baseline = best[name.split(",")[0] + ", one by one"]
        print(f"{name:28s} {seconds * 1e3:9.2f} ms   speed-up {baseline / seconds:5.2f}x")


if __name__ == "__main__":
    main()
