"""turngym envs: Gymnasium text environments whose observations are chat messages.

env = envs.make("guess-number-v0", difficulty="easy")
messages, info = env.reset(seed=0)
messages, reward, terminated, truncated, info = env.step("50")
"""

from envs import builtin_envs as _builtin_envs  # noqa: F401  (registers the built-in ids)
from envs.assistant_turn import AssistantTurn, ToolCallRequest
from envs.errors import InvalidAction, UnknownEnvError
from envs.registration import EnvSpec, list_envs, make, register, spec
from envs.spaces import AssistantAction, ChatMessages
from envs.step_result import StepResult
from envs.text_env import TextEnv

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
