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
from turngym.common.moved_modules import keep_old_paths

# Modules that moved (issue 35: envs/ holds folders by concept). Their old paths still import the moved
# module, with one DeprecationWarning (turngym/common/moved_modules.py); docs/design.md lists them.
keep_old_paths(
    {
        "envs.text_env": "envs.core.text_env",
        "envs.protocol": "envs.core.protocol",
        "envs.step_result": "envs.core.step_result",
        "envs.errors": "envs.core.errors",
        "envs.spaces": "envs.core.spaces",
        "envs.assistant_turn": "envs.core.assistant_turn",
        "envs.reset_options": "envs.core.reset_options",
        "envs.transcript": "envs.core.transcript",
        "envs.episode_end": "envs.core.episode_end",
        "envs.seeding": "envs.core.seeding",
        "envs.splitmix": "envs.core.splitmix",
        "envs.lazy_seeding": "envs.core.lazy_seeding",
        "envs.env_tools": "envs.tool_layer.env_tools",
        "envs.tool_turn": "envs.tool_layer.tool_turn",
        "envs.extra_tools": "envs.tool_layer.extra_tools",
        "envs.turn_limits": "envs.tool_layer.turn_limits",
        "envs.registration": "envs.registry.registration",
        "envs.builtin_envs": "envs.registry.builtin_envs",
        "envs.client_kwargs": "envs.registry.client_kwargs",
        "envs.env_check": "envs.registry.env_check",
        "envs.baseline_players": "envs.baselines.baseline_players",
        "envs.expert_evaluation": "envs.baselines.expert_evaluation",
        "envs.behaviour": "envs.baselines.behaviour",
        "envs.success_interval": "envs.baselines.success_interval",
        "envs.messages": "turngym.chat.message",
        "envs.remote.server": "envs.server.app",
    }
)


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
