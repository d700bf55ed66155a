"""turngym envs: Gymnasium text environments whose observations are chat messages.

env = envs.make("guess-number-v0", difficulty="easy")
messages, info = env.reset(seed=0)
messages, reward, terminated, truncated, info = env.step("50")
"""

from typing import Any

from envs.core.assistant_turn import AssistantTurn
from envs.core.errors import InvalidAction, UnknownEnvError
from envs.core.spaces import AssistantAction, ChatMessages
from envs.core.step_result import StepResult
from envs.core.text_env import TextEnv
from envs.registry import builtin_envs as _builtin_envs  # noqa: F401  (registers the built-in ids)
from envs.registry.registration import EnvSpec, list_envs, make, register, spec

__all__ = [
    "AssistantAction",
    "AssistantTurn",
    "ChatMessages",
    "EnvSpec",
    "InvalidAction",
    "StepResult",
    "TextEnv",
    "ToolCallRequest",
    "UnknownEnvError",
    "list_envs",
    "make",
    "register",
    "spec",
]


def __getattr__(name: str) -> Any:
    # `ToolCallRequest` is `turngym.chat.calls.ToolCall` (one tool-call concept); resolved on use so that
    # `import envs` does not import `tools` and pydantic.
    if name == "ToolCallRequest":
        from turngym.chat.calls.call import ToolCall

        return ToolCall
    raise AttributeError(f"module 'envs' has no attribute {name!r}")
