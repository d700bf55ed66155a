"""The `Sandbox` protocol both backends satisfy, and `make_sandbox`: one factory for `local` and `fusion`."""

from __future__ import annotations

from collections.abc import Sequence
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


def check_sandbox_arg(sandbox: Any, backends: Sequence[str] = BACKENDS, endpoint: str | None = None) -> None:
    """Refuse an env's `sandbox=` argument that names no backend it offers and is no sandbox object.

    Args:
        sandbox: the argument: a backend name, or an object with an async `arun` method.
        backends: the names this env accepts (a subset of `BACKENDS`).
        endpoint: the server's URL, which `"fusion"` needs.

    Raises:
        ValueError: naming what `sandbox` may be, or the missing endpoint.

    >>> check_sandbox_arg("docker", backends=("local",))
    Traceback (most recent call last):
    ...
    ValueError: sandbox must be 'local' or an object with an async `arun` method
    """
    if sandbox not in backends and not callable(getattr(sandbox, "arun", None)):
        named = ", ".join(repr(name) for name in backends)
        raise ValueError(f"sandbox must be {named} or an object with an async `arun` method")
    if sandbox == "fusion" and not endpoint:
        raise ValueError("sandbox='fusion' needs sandbox_endpoint='http://host:port'")


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
