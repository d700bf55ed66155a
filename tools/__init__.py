"""turngym tools: typed tools with OpenAI schemas, YAML loading, built-ins and code sandboxes."""

from tools.result import ToolResult
from tools.tool import FunctionTool, Tool, tool

__all__ = ["FunctionTool", "Tool", "ToolResult", "tool"]
