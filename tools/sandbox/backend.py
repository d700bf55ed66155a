"""The `Sandbox` protocol both backends satisfy, and `make_sandbox`: one factory for `local` and `fusion`."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from tools.sandbox.result import SandboxResult

BACKENDS = ("local", "fusion")


@runtime_checkable
class Sandbox(Protocol):
    """Runs a program in isolation and says how it ended; neither method raises on bad code."""

    def run(self, code: str, language: str = "python", **kwargs: Any) -> SandboxResult:
        """Run `code` and wait for its result."""
        ...

    async def arun(self, code: str, language: str = "python", **kwargs: Any) -> SandboxResult:
        """Run `code` without blocking the event loop."""
        ...


def make_sandbox(
    backend: str = "local",
    *,
    endpoint: str | None = None,
    timeout_s: float = 10.0,
    memory_mb: int = 512,
    isolation: str = "auto",
) -> Sandbox:
    """A `LocalSandbox` (`backend="local"`, with `isolation`) or a `FusionSandbox` client of `endpoint`."""
    if backend == "local":
        from tools.sandbox.local import LocalSandbox

        return LocalSandbox(timeout_s=timeout_s, memory_mb=memory_mb, isolation=isolation)
    if backend == "fusion":
        from tools.sandbox.fusion import FusionSandbox

        return FusionSandbox(endpoint, timeout_s=timeout_s, memory_mb=memory_mb)
    raise ValueError(f"sandbox backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
