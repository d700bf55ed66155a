"""The env contract: what rollout, the registry and the env server may call on any turngym env.

`TextEnv` implements it, every `TextWrapper` forwards it (through `ForwardsEnvProtocol`) and `RemoteEnv`
carries it over HTTP, so callers use these members directly instead of reaching through `.unwrapped`
or probing with `getattr`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from turngym.chat.message import Message

#: What `reset`/`areset` return: the opening messages and an info dict.
ResetResult = tuple[list["Message"], dict[str, Any]]
#: What `step`/`astep` return: (messages to append, reward, terminated, truncated, info).
StepTuple = tuple[list["Message"], float, bool, bool, dict[str, Any]]


@runtime_checkable
class EnvProtocol(Protocol):
    """A multi-turn text env: chat messages in, assistant turns out, and tools.

    `isinstance(env, EnvProtocol)` holds for `TextEnv`, every wrapper stack `envs.make` builds and
    `RemoteEnv`; a plain `gymnasium.Env` lacks the members past `reset`/`step` and does not match.

    Attributes:
        max_action_chars: the longest reply `step` reads; longer ones are a format error.
        tool_call_format: how tool calls written in reply text are read (`turngym.chat.calls` format name), or
            None when reply text is never read as calls. Change it with `set_tool_call_format`.

    Example:
        >>> import envs
        >>> from envs.core.protocol import EnvProtocol
        >>> env = envs.make("guess-number-v0")
        >>> isinstance(env, EnvProtocol)
        True
        >>> messages, info = env.reset(seed=0)
        >>> [schema["function"]["name"] for schema in env.tool_schemas]
        ['guess']
    """

    max_action_chars: int
    tool_call_format: str | None

    @property
    def tool_schemas(self) -> list[dict]:
        """OpenAI function schemas of the tools the agent may call, as a chat template renders them."""
        ...

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> ResetResult:
        """Start an episode; the same seed and options give the same episode."""
        ...

    def step(self, action: Any) -> StepTuple:
        """Play one assistant turn (text or a parsed assistant message)."""
        ...

    async def areset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> ResetResult:
        """`reset` on the caller's event loop: an opponent opening the game and tool cleanup are awaited."""
        ...

    async def astep(self, action: Any) -> StepTuple:
        """`step` on the caller's event loop: tool calls and opponents are awaited, not run in a new loop."""
        ...

    def set_tool_call_format(self, tool_call_format: str | None) -> None:
        """Read tool calls written in reply text in this format (None: text is never read as calls)."""
        ...

    def set_turn_limits(
        self,
        *,
        max_action_chars: int | None = None,
        max_tool_calls_per_turn: int | None | Any = ...,
        max_tool_time_s: float | None | Any = ...,
    ) -> None:
        """Change the reply size limit and the per-turn tool limits (None: no limit; omitted: unchanged)."""
        ...

    def close(self) -> None:
        """Release the env's resources (tool state, sessions)."""
        ...


#: The members of `EnvProtocol`, for `conforms`.
PROTOCOL_MEMBERS = (
    "max_action_chars",
    "tool_call_format",
    "tool_schemas",
    "reset",
    "step",
    "areset",
    "astep",
    "set_tool_call_format",
    "set_turn_limits",
    "close",
)


def conforms(env: object) -> bool:
    """Whether `env` has every `EnvProtocol` member; cheap, and no property is evaluated.

    `isinstance(env, EnvProtocol)` reads every member, properties included (`tool_schemas` builds the
    env's tools), which costs about a millisecond; callers on a per-episode path use this instead.

    Args:
        env: Any object.

    Returns:
        True when each member is on its class or in its instance dict.

    Example:
        >>> import envs
        >>> conforms(envs.make("guess-number-v0")), conforms(object())
        (True, False)
    """
    cls, own = type(env), getattr(env, "__dict__", {})
    return all(hasattr(cls, name) or name in own for name in PROTOCOL_MEMBERS)


def missing_members(env: object) -> list[str]:
    """The `EnvProtocol` members `env` lacks (empty when it `conforms`), for an error message."""
    cls, own = type(env), getattr(env, "__dict__", {})
    return [name for name in PROTOCOL_MEMBERS if not (hasattr(cls, name) or name in own)]


class ForwardsEnvProtocol:
    """Mixin for wrappers: every `EnvProtocol` member except reset/step/areset/astep goes to `self.env`.

    Put it before `gymnasium.Wrapper` in the bases (`class TextWrapper(ForwardsEnvProtocol, gym.Wrapper)`);
    the wrapper still writes its own `reset`/`step`/`areset`/`astep`, which are where wrappers differ.
    Setting `tool_call_format` or calling a setter reaches the wrapped env, so a whole stack reads calls
    the same way.
    """

    env: Any

    @property
    def max_action_chars(self) -> int:
        """The wrapped env's reply size limit."""
        return self.env.max_action_chars

    @property
    def tool_call_format(self) -> str | None:
        """The wrapped env's tool-call format."""
        return self.env.tool_call_format

    @tool_call_format.setter
    def tool_call_format(self, value: str | None) -> None:
        self.env.set_tool_call_format(value)

    @property
    def tool_schemas(self) -> list[dict]:
        """The wrapped env's tool schemas."""
        return self.env.tool_schemas

    def set_tool_call_format(self, tool_call_format: str | None) -> None:
        """Set the wrapped env's tool-call format."""
        self.env.set_tool_call_format(tool_call_format)

    def set_turn_limits(self, **limits: Any) -> None:
        """Set the wrapped env's turn limits (same keywords as `TextEnv.set_turn_limits`)."""
        self.env.set_turn_limits(**limits)
