"""`python`: run code in a sandbox; the stateful variant keeps one interpreter per episode."""

from __future__ import annotations

import asyncio

import pydantic

from tools.result import ToolResult
from tools.tool import Tool


class _CodeArgs(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")
    code: str = pydantic.Field(description="Python source to run. Print what you want to see.")


def _result(res) -> ToolResult:
    metrics = {
        "sandbox_s": float(res.duration_s),
        "sandbox_ok": float(res.ok),
        "sandbox_timeout": float(res.status == "timeout"),
    }
    return ToolResult(content=res.to_text(), is_error=res.status == "sandbox_error", metrics=metrics)


class PythonTool(Tool):
    """Each call runs in a fresh sandboxed process (LocalSandbox, or a SandboxFusion server)."""

    name = "python"
    description = (
        "Run a Python 3 program in a fresh sandbox (no network, no state kept between calls) and return its "
        "stdout and stderr. Use print() to show results."
    )
    args_model = _CodeArgs
    concurrent = True

    def __init__(
        self,
        backend: str = "local",
        endpoint: str | None = None,
        run_timeout_s: float = 10.0,
        memory_mb: int = 512,
        isolation: str = "auto",
    ) -> None:
        from tools.sandbox.backend import make_sandbox

        self.sandbox = make_sandbox(
            backend, endpoint=endpoint, timeout_s=run_timeout_s, memory_mb=memory_mb, isolation=isolation
        )
        self.timeout_s = run_timeout_s + 30.0  # the sandbox enforces the real limit

    async def run(self, args: _CodeArgs, context: dict | None) -> ToolResult:
        return _result(await self.sandbox.arun(args.code, "python"))


class PythonSessionTool(Tool):
    """A persistent sandboxed interpreter per episode: variables and files survive between calls."""

    name = "python"
    description = (
        "Run Python 3 code in a persistent sandboxed session (like a notebook: variables, imports and files "
        "persist between calls; the value of a final expression is printed). No network."
    )
    args_model = _CodeArgs
    stateful = True

    def __init__(self, run_timeout_s: float = 10.0, memory_mb: int = 512, isolation: str = "auto") -> None:
        from tools.sandbox.local import LocalSandbox

        self.sandbox = LocalSandbox(timeout_s=run_timeout_s, memory_mb=memory_mb, isolation=isolation)
        self.timeout_s = run_timeout_s + 30.0
        self.session = None

    def init_state(self) -> None:
        self.session = None

    async def run(self, args: _CodeArgs, context: dict | None) -> ToolResult:
        from tools.sandbox.session import PythonSession

        if self.session is None:
            self.session = PythonSession(self.sandbox)
        return _result(await asyncio.to_thread(self.session.run, args.code))

    async def aclose(self) -> None:
        session, self.session = self.session, None
        if session is not None:
            await asyncio.to_thread(session.close)
