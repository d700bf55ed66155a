"""`submit`: the agent's final answer; ends the episode."""

from __future__ import annotations

import pydantic

from tools.result import ToolResult
from tools.tool import Tool


class Submit(Tool):
    """Ends the episode with an answer the environment then grades."""

    name = "submit"
    description = "Submit your final answer. This ends the episode; call it once, when you are sure."
    timeout_s = 5.0
    concurrent = True

    class Args(pydantic.BaseModel):
        model_config = pydantic.ConfigDict(extra="forbid")
        answer: str = pydantic.Field(description="The final answer.")

    async def run(self, args: Args, context: dict | None) -> ToolResult:
        return ToolResult(content="Answer submitted.", terminate=True, answer=args.answer)
