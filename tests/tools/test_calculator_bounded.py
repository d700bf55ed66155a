"""No calculator expression can hold the event loop: each is evaluated in a worker process that is
killed at the call's deadline.

The attack: `calculator(expression="round(1/3, 10**7)")` (29 characters) blocked the event loop for
7.5 s, and a served env's `/health` with it: `Calculator.run` was `async` and computed on the loop, so
the tool's 5 s timeout never fired. 10**8 takes minutes. calculator-qa's `expression` reset option
reached the same code, and `(2**10000+1)**0.5` raised an OverflowError that became a 500.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time

import httpx
import pytest

from tools.builtin.calculator import Calculator
from turngym.serving.loopback_server import spawn_server, stop_server

ATTACK = "round(1/3, 10**7)"


def _workers(running_only: bool = False) -> set[int]:
    """Pids of this process's calculator workers (read from /proc: the real processes); with
    `running_only`, those computing (state R) rather than waiting idle for a request."""
    found = set()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                state, ppid = f.read().rsplit(")", 1)[1].split()[:2]
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read()
        except (OSError, ValueError, IndexError):
            continue
        if int(ppid) == os.getpid() and b"arithmetic.py" in cmdline and (state == "R" or not running_only):
            found.add(int(pid))
    return found


def test_the_attack_leaves_the_loop_running_and_its_worker_is_killed():
    calc = Calculator()
    calc.timeout_s = 1.0  # the same path as the default 5 s, sooner

    async def scenario():
        beats = 0
        seen_busy: set[int] = set()

        async def heartbeat():
            nonlocal beats
            while True:
                await asyncio.sleep(0.02)
                beats += 1
                seen_busy.update(_workers(running_only=True))

        ticker = asyncio.create_task(heartbeat())
        result = await calc.call({"expression": ATTACK})
        during = beats
        ticker.cancel()
        return result, during, seen_busy

    result, beats, busy = asyncio.run(scenario())
    # The worker's own deadline (the calculator's message) or, on a busy machine, the call's.
    assert result.is_error and ("took longer than" in result.content or "timed out" in result.content)
    assert beats >= 5, f"the event loop ran only {beats} heartbeats while the call was in flight"
    assert busy and not (busy & _workers()), "the worker that computed the attack is still alive"
    assert calc.call_sync({"expression": "6 * 7"}).content == "42"  # a fresh worker answers


def test_an_overflow_is_a_clean_tool_error():
    result = Calculator().call_sync({"expression": "(2**10000+1)**0.5"})
    assert result.is_error and result.content.startswith("calculator: ")
    assert "Overflow" not in result.content and "failed" not in result.content


def test_answers_are_unchanged():
    calc = Calculator()
    assert calc.call_sync({"expression": "(2**10 - 1) / 3"}).content == "341"
    assert calc.call_sync({"expression": "1/3 + 2"}).content == "7/3 (≈ 2.33333333333)"
    assert calc.call_sync({"expression": "sqrt(2)"}).content == "≈ 1.4142135623731"
    assert calc.call_sync({"expression": "2**15000 / 3"}).content.endswith(")")  # past 4300 digits
    assert calc.call_sync({"expression": "9**9**9"}).content == "calculator: result too large"


@pytest.fixture(scope="module")
def served():
    url, proc = spawn_server(["-m", "envs", "serve"])
    yield url
    stop_server(proc)


def _session(url: str) -> str:
    response = httpx.post(f"{url}/v1/sessions", json={"env_id": "calculator-qa-v0"}, timeout=30)
    assert response.status_code == 201, response.text
    return response.json()["session_id"]


@pytest.mark.parametrize("expression", ["(2**10000+1)**0.5", ATTACK])
def test_a_clients_reset_expression_is_a_400_not_a_500(served, expression):
    sid = _session(served)
    response = httpx.post(
        f"{served}/v1/sessions/{sid}/reset",
        json={"seed": 0, "options": {"expression": expression}},
        timeout=60,
    )
    assert response.status_code == 400, response.text
    assert response.json()["error"]["code"] == "bad_options"


def test_health_answers_while_an_agent_runs_the_attack(served):
    sid = _session(served)
    assert httpx.post(f"{served}/v1/sessions/{sid}/reset", json={"seed": 0}, timeout=30).status_code == 200
    action = f'<tool_call>{{"name": "calculator", "arguments": {{"expression": "{ATTACK}"}}}}</tool_call>'
    done = threading.Event()
    answered = 0

    def poll_health():
        nonlocal answered
        with httpx.Client(timeout=60) as client:
            while not done.is_set():
                if client.get(f"{served}/health").status_code == 200:
                    answered += 1
                time.sleep(0.05)

    poller = threading.Thread(target=poll_health)
    poller.start()
    try:
        step = httpx.post(f"{served}/v1/sessions/{sid}/step", json={"action": action}, timeout=120)
    finally:
        done.set()
        poller.join()
    assert answered >= 5, f"/health answered only {answered} times during the step"
    assert step.status_code == 200, step.text
    tool_messages = [m for m in step.json()["observation"]["messages"] if m.get("role") == "tool"]
    assert tool_messages and any(w in tool_messages[-1]["content"] for w in ("took longer than", "timed out"))
