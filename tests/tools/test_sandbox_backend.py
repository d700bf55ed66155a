"""The `Sandbox` protocol, `make_sandbox`, `FusionSandbox.run` through `arun`, and the one `run_sync`."""

from __future__ import annotations

import asyncio
import threading

import pytest

from tools.sandbox import FusionSandbox, LocalSandbox, Sandbox, make_sandbox
from tools.sandbox.isolation import bwrap_path
from turngym.common.run_sync import run_sync

ISOLATION = "bwrap" if bwrap_path() else "none"


def test_make_sandbox_builds_either_backend_behind_one_protocol():
    local = make_sandbox("local", timeout_s=5, memory_mb=256, isolation=ISOLATION)
    fusion = make_sandbox("fusion", endpoint="http://127.0.0.1:9", timeout_s=3, memory_mb=128)
    assert isinstance(local, LocalSandbox) and isinstance(fusion, FusionSandbox)
    assert isinstance(local, Sandbox) and isinstance(fusion, Sandbox)
    assert (local.timeout_s, local.memory_mb) == (5, 256)
    assert (fusion.endpoint, fusion.timeout_s, fusion.memory_mb) == ("http://127.0.0.1:9", 3, 128)
    assert local.run("print(6 * 7)").stdout == "42\n"
    with pytest.raises(ValueError, match="local, fusion"):
        make_sandbox("docker")


def test_python_tool_and_code_env_build_sandboxes_through_the_factory():
    from envs.code.code_sandbox import CodeSandboxEnv
    from tools.builtin.python import PythonTool

    tool = PythonTool(backend="fusion", endpoint="http://127.0.0.1:9", run_timeout_s=2)
    assert isinstance(tool.sandbox, FusionSandbox) and tool.sandbox.timeout_s == 2
    with pytest.raises(ValueError, match="got 'docker'"):
        PythonTool(backend="docker")
    env = CodeSandboxEnv(sandbox="fusion", sandbox_endpoint="http://127.0.0.1:9", run_timeout_s=3)
    assert isinstance(env.sandbox, FusionSandbox) and env.sandbox.endpoint == "http://127.0.0.1:9"


@pytest.mark.slow
def test_fusion_run_is_arun_awaited_and_works_inside_a_running_loop(sandbox_server):
    fs = FusionSandbox(sandbox_server)
    assert fs.run("print(1 + 1)").stdout == "2\n"
    assert fs.run("print(2 + 2)").stdout == "4\n"
    assert len(fs._aclients) == 1  # both sync runs shared the background loop's one client

    async def inside_a_loop():
        sync = fs.run("print(3)")  # blocking call from a coroutine: must not deadlock
        return sync, await fs.arun("print(4)")

    sync, async_ = asyncio.run(inside_a_loop())
    assert (sync.stdout, async_.stdout) == ("3\n", "4\n")
    bad = fs.run("x", language="cobol")
    assert bad.status in ("sandbox_error", "error")
    fs.close()
    assert fs.run("print(5)").stdout == "5\n"  # a new client after close
    unreachable = FusionSandbox("http://127.0.0.1:9", max_attempts=1).run("print(1)")
    assert unreachable.status == "sandbox_error" and "cannot reach" in unreachable.message


def test_run_sync_outside_and_inside_a_loop_returns_and_raises():
    async def double(x):
        await asyncio.sleep(0)
        return 2 * x, threading.current_thread().name

    value, thread = run_sync(double(21))
    assert value == 42 and thread == threading.current_thread().name

    async def inside():
        return run_sync(double(5))  # a loop is running here: run on a worker thread

    value, thread = asyncio.run(inside())
    assert value == 10 and thread != threading.current_thread().name

    async def fails():
        raise KeyError("boom")

    with pytest.raises(KeyError, match="boom"):
        run_sync(fails())

    async def fails_inside():
        return run_sync(fails())

    with pytest.raises(KeyError, match="boom"):
        asyncio.run(fails_inside())


def test_one_run_sync_is_used_everywhere():
    import envs.core.text_env
    import interactions.llm_user
    import rollout.collection
    from tools.tool import Tool

    for module in (
        envs.core.text_env,
        interactions.llm_user,
        rollout.collection,
    ):
        assert module.run_sync is run_sync
    assert "run_sync" in Tool.call_sync.__code__.co_names
