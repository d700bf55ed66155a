"""Run a verl `BaseTool` subclass (from verl's tool YAML) as a turngym Tool, one verl instance per episode."""

from __future__ import annotations

import json
from typing import Any

from tools.result import ToolResult
from tools.tool import Tool


class VerlToolAdapter(Tool):
    """verl's create/execute/release lifecycle mapped onto fork/call/aclose."""

    stateful = True

    def __init__(self, cls: type, config: dict[str, Any], tool_schema: dict[str, Any]) -> None:
        from verl.tools.schemas import OpenAIFunctionToolSchema

        self._schema = tool_schema
        self.name = tool_schema["function"]["name"]
        self.description = tool_schema["function"].get("description", "")
        self.verl_tool = cls(config=config, tool_schema=OpenAIFunctionToolSchema.model_validate(tool_schema))
        self.instance_id: str | None = None

    @property
    def schema(self) -> dict[str, Any]:
        return self._schema

    def init_state(self) -> None:
        self.instance_id = None

    def parse_arguments(self, arguments):
        if arguments is None or arguments == "":
            arguments = {}
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except json.JSONDecodeError as exc:
                return f"arguments are not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        if not isinstance(arguments, dict):
            return "arguments must be a JSON object"
        required = self._schema["function"].get("parameters", {}).get("required", [])
        missing = [k for k in required if k not in arguments]
        if missing:
            return "; ".join(f"missing required argument `{k}`" for k in missing)
        return arguments

    async def run(self, args: Any, context: dict | None) -> ToolResult:
        if self.instance_id is None:
            created = await self.verl_tool.create()
            self.instance_id = created[0] if isinstance(created, tuple) else created
        response, reward, metrics = await self.verl_tool.execute(self.instance_id, args)
        text = response if isinstance(response, str) else (getattr(response, "text", None) or "")
        numeric = {k: float(v) for k, v in (metrics or {}).items() if isinstance(v, (int, float))}
        return ToolResult(text, reward=float(reward) if reward else None, metrics=numeric)

    async def aclose(self) -> None:
        instance, self.instance_id = self.instance_id, None
        if instance is not None:
            await self.verl_tool.release(instance)
