"""GameActionTool: a game's move as a typed tool, dispatched to the env that runs the episode."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from envs.core.errors import InvalidAction
from tools import Tool, ToolResult

# Per game class: `action_args_model()` defines a pydantic class, which costs ~1 ms each time.
_ARGS_MODELS: dict[type, type[BaseModel]] = {}
_TOOLS: dict[type, GameActionTool] = {}


def _args_model(game_class: type) -> type[BaseModel]:
    model = _ARGS_MODELS.get(game_class)
    if model is None:
        model = _ARGS_MODELS[game_class] = game_class.action_args_model()
    return model


class GameActionTool(Tool):
    """Calls `play` on the env given in the call context; the feedback becomes the tool result.

    Stateless (the game state lives in the calling env), so `for_game` shares one per game class.
    """

    def __init__(self, game_class: Any):
        self.name = game_class.action_tool_name
        self.description = game_class.action_tool_description
        self.args_model = _args_model(game_class)
        super().__init__()

    @classmethod
    def for_game(cls, game_class: Any) -> GameActionTool:
        """The action tool of `game_class`, built once per class."""
        tool = _TOOLS.get(game_class)
        if tool is None:
            tool = _TOOLS[game_class] = cls(game_class)
        return tool

    async def run(self, args: BaseModel, context: dict | None) -> ToolResult:
        """Make the move in the calling env."""
        env = (context or {}).get("env")
        if env is None:
            return ToolResult("Error: this tool only works inside its game.", is_error=True)
        if env.episode_over:
            return ToolResult("Error: the game is over.", is_error=True)
        try:
            action = env.action_from_tool(args)
        except InvalidAction as e:
            (context.get("info") or {})["format_error"] = str(e)
            return ToolResult(f"Error: {e}", is_error=True)
        # A StepResult, or the plain 5-tuple a game may return on its hot path.
        messages, reward, terminated, _, info = env.play(action)
        if "info" in context:
            context["info"].update(info)
        content = "\n".join(m["content"] for m in messages)
        return ToolResult(content, reward=reward, terminate=terminated)
