"""What the env core needs of its tool layer, and how it gets one without importing the layer above it.

`TextEnv` (envs/core/text_env.py) runs a turn's tool calls, asks whether the agent has tools, and releases
an episode's tool copies; it does all of that through a `ToolHost`. The one implementation,
`envs.tool_layer.env_tools.EnvTools`, sits a layer above the core and builds on it (it reads the core's
turns and results), so the core cannot import it without an arrow pointing up. Instead the package's
`envs/__init__.py`, the one module every import of `envs.*` runs first, installs the tool layer's builder
here (`install_tool_layer`), and `build_tool_host` calls it: the layers are put together at the top.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from envs.core.assistant_turn import AssistantTurn
    from envs.core.step_result import StepResult


class ToolHost(Protocol):
    """An env's tool layer as the core sees it: its tools, the per-turn limits, and running a turn."""

    max_tool_calls_per_turn: int | None
    max_tool_time_s: float | None

    @property
    def registry(self) -> Any:
        """The env's tools as a `tools.ToolRegistry`."""
        ...

    def has_tools(self) -> bool:
        """Whether the agent may call any tool (text is read for calls only then)."""
        ...

    def set_limits(self, *, max_tool_calls_per_turn: Any = ..., max_tool_time_s: Any = ...) -> None:
        """Change the per-turn limits (None: no limit; omitted: unchanged)."""
        ...

    def run_turn(self, turn: AssistantTurn) -> Awaitable[StepResult]:
        """Run `turn`'s tool calls within the per-turn limits."""
        ...

    def release(self) -> None:
        """Close this episode's tool instances."""
        ...

    async def arelease(self) -> None:
        """`release` on the caller's event loop."""
        ...


#: (env, the `tools=` it was given, the per-turn limits as keywords) -> its tool layer.
ToolHostBuilder = Callable[..., ToolHost]

_builder: ToolHostBuilder | None = None


def install_tool_layer(builder: ToolHostBuilder) -> None:
    """Make `builder` the one that builds every env's tool layer (`envs/__init__.py` installs EnvTools')."""
    global _builder
    _builder = builder


def build_tool_host(env: Any, tools: Any = None, **limits: Any) -> ToolHost:
    """The tool layer of `env`, with the extra `tools` and per-turn `limits` it was given.

    Raises:
        RuntimeError: no tool layer was installed (only when `envs/__init__.py` did not run, which Python
            runs before any module of the package).
    """
    if _builder is None:
        raise RuntimeError("no tool layer installed: envs/__init__.py installs envs.tool_layer's on import")
    return _builder(env, tools, **limits)
