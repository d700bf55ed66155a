"""A turn's tool calls (envs.tool_layer.tool_turn): concurrent tools overlap, results keep call order, limits still hold."""

import asyncio
import threading
import time

import pydantic
import pytest

import envs
from tools import Tool, ToolResult


class Nap(Tool):
    """Sleeps `seconds` on the event loop and records when it ran (loop time)."""

    description = "Sleep, then say so."
    concurrent = True

    class Args(pydantic.BaseModel):
        seconds: float

    def __init__(self, name: str, log: dict, *, concurrent: bool = True):
        self.name, self.log, self.concurrent = name, log, concurrent

    async def run(self, args, context):
        loop = asyncio.get_running_loop()
        start = loop.time()
        try:
            await asyncio.sleep(args.seconds)
        finally:
            self.log.setdefault(self.name, []).append((start, loop.time()))
        return f"{self.name} slept {args.seconds:g} s"


class Fails(Tool):
    """A concurrent tool whose own `call` raises (a subclass breaking `Tool.call`'s promise)."""

    name = "fails"
    description = "Always fails."
    concurrent = True

    async def call(self, arguments, context=None):
        raise RuntimeError("broken on purpose")


class Finish(Tool):
    """A concurrent tool that ends the episode, paying 1."""

    name = "finish"
    description = "End the episode."
    concurrent = True

    async def run(self, args, context):
        return ToolResult("done", reward=1.0, terminate=True)


def _calls(*calls):
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": args}}
            for i, (name, args) in enumerate(calls)
        ],
    }


def _env(*tools, **limits):
    env = envs.make("guess-number-v0", tools=list(tools), **limits)
    env.reset(seed=0)
    return env


def _overlap(a, b):
    return a[0] < b[1] and b[0] < a[1]


def test_concurrent_calls_overlap_and_results_keep_call_order():
    log: dict = {}
    env = _env(Nap("slow", log), Nap("quick", log))
    messages, reward, terminated, truncated, info = env.step(
        _calls(("slow", {"seconds": 0.3}), ("quick", {"seconds": 0.05}))
    )
    assert _overlap(log["slow"][0], log["quick"][0])  # quick started before slow finished
    assert log["quick"][0][1] < log["slow"][0][1]  # and finished first
    assert [(m["tool_call_id"], m["content"]) for m in messages] == [
        ("c0", "slow slept 0.3 s"),
        ("c1", "quick slept 0.05 s"),
    ]
    assert info["tool_calls"] == 2 and info["tool_errors"] == 0 and info["tool_calls_not_run"] == 0
    assert (reward, terminated, truncated) == (0.0, False, False)


def test_astep_runs_concurrent_calls_on_the_callers_loop_too():
    log: dict = {}
    env = _env(Nap("a", log), Nap("b", log))

    async def both():
        return await env.astep(_calls(("a", {"seconds": 0.1}), ("b", {"seconds": 0.1})))

    messages, *_ = asyncio.run(both())
    assert _overlap(log["a"][0], log["b"][0])
    assert [m["name"] for m in messages] == ["a", "b"]


def test_a_tool_not_marked_concurrent_runs_alone_between_the_others():
    log: dict = {}
    env = _env(Nap("a", log), Nap("edit", log, concurrent=False), Nap("b", log), Nap("c", log))
    calls = [
        ("a", {"seconds": 0.1}),
        ("edit", {"seconds": 0.1}),
        ("b", {"seconds": 0.1}),
        ("c", {"seconds": 0.1}),
    ]
    messages, *_ = env.step(_calls(*calls))
    assert [m["name"] for m in messages] == ["a", "edit", "b", "c"]
    edit = log["edit"][0]
    assert not _overlap(edit, log["a"][0]) and not _overlap(edit, log["b"][0])
    assert log["a"][0][1] <= edit[0] <= edit[1] <= log["b"][0][0]  # after a, before b
    assert _overlap(log["b"][0], log["c"][0])  # the calls after it run together again


def test_one_failing_call_does_not_spoil_the_others():
    log: dict = {}
    env = _env(Nap("a", log), Fails(), Nap("b", log))
    calls = [
        ("a", {"seconds": 0.05}),
        ("fails", {}),
        ("nope", {}),
        ("b", {"seconds": 0.05}),
        ("a", {"seconds": "x"}),
    ]
    messages, reward, terminated, truncated, info = env.step(_calls(*calls))
    contents = [m["content"] for m in messages if m["role"] == "tool"]
    assert contents[0] == "a slept 0.05 s" and contents[3] == "b slept 0.05 s"
    assert contents[1] == "tool `fails` failed: RuntimeError: broken on purpose"
    assert contents[2].startswith("Error: unknown tool `nope`. Available tools: guess, a, fails, b")
    assert contents[4].startswith("tool `a`: ") and "seconds" in contents[4]  # bad arguments, its own error
    assert info["tool_errors"] == 3 and not terminated and not truncated


def test_the_turn_budget_cuts_concurrent_calls_and_skips_the_rest():
    log: dict = {}
    env = _env(Nap("a", log), Nap("b", log), Nap("c", log, concurrent=False), max_tool_time_s=2.0)
    calls = [("a", {"seconds": 0.01}), ("b", {"seconds": 30}), ("a", {"seconds": 30}), ("c", {"seconds": 0})]
    messages, reward, terminated, truncated, info = env.step(_calls(*calls))
    tool = [m["content"] for m in messages if m["role"] == "tool"]
    assert tool[0] == "a slept 0.01 s"
    assert tool[1].startswith("Cut: stopped after") and tool[2].startswith("Cut: stopped after")
    assert tool[3] == "Not run: this turn's tool time budget of 2 s ran out at call 2."
    assert "c" not in log  # never started
    assert info["tool_call_cut"] == "b" and info["tool_calls_not_run"] == 1 and info["tool_errors"] == 2
    note = messages[-1]["content"]
    assert "ran out during calls 2 (`b`), 3 (`a`), which were stopped; call 4 was not run." in note


def test_the_call_cap_still_holds_for_concurrent_calls():
    log: dict = {}
    env = _env(Nap("a", log), max_tool_calls_per_turn=2)
    messages, *_, info = env.step(_calls(*[("a", {"seconds": 0.01})] * 4))
    tool = [m["content"] for m in messages if m["role"] == "tool"]
    assert tool[:2] == ["a slept 0.01 s"] * 2 and len(log["a"]) == 2
    assert all(t.startswith("Not run: only the first 2 tool calls of a turn are run") for t in tool[2:])
    assert info["tool_calls_not_run"] == 2
    assert "at most 2 run per turn, so calls 3-4 were not run." in messages[-1]["content"]


def test_a_call_beside_the_one_that_ended_the_episode_is_not_used():
    log: dict = {}
    env = _env(Nap("a", log), Finish())
    messages, reward, terminated, truncated, info = env.step(
        _calls(("a", {"seconds": 0.01}), ("finish", {}), ("a", {"seconds": 0.01}))
    )
    tool = [m["content"] for m in messages if m["role"] == "tool"]
    assert tool[0] == "a slept 0.01 s" and tool[1] == "done"
    assert tool[2].startswith("Not used: the episode ended at an earlier call")
    assert reward == 1.0 and terminated and info["tool_calls_not_run"] == 1


def test_a_step_does_not_wait_for_the_thread_of_a_cut_sync_tool():
    finished = threading.Event()

    class Blocks(Tool):
        name = "blocks"
        description = "Sleep in a worker thread."

        def run(self, args, context):  # a plain def: it runs in a worker thread
            time.sleep(3.0)
            finished.set()
            return "awake"

    env = _env(Blocks(), max_tool_time_s=0.1)
    messages, *_ = env.step(_calls(("blocks", {})))
    assert messages[0]["content"].startswith("Cut: stopped after")
    assert not finished.is_set()  # the step returned while the cut call's thread still slept
    assert finished.wait(10)


@pytest.mark.parametrize("name", ["calculator", "search", "submit", "python"])
def test_the_builtin_stateless_tools_are_concurrent_and_the_session_tool_is_not(name):
    from tools.builtin import get_builtin
    from tools.builtin.python import PythonSessionTool

    assert get_builtin(name).concurrent
    assert not PythonSessionTool.concurrent and not Tool.concurrent
