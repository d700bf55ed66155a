"""Tool: schemas, validation messages, never raising, call_sync, fork/aclose."""

from __future__ import annotations

import asyncio
import json
from typing import Literal

import pydantic
import pytest

import tools
from tools import Tool, ToolResult, tool


class Point(pydantic.BaseModel):
    x: float = pydantic.Field(description="east")
    y: float = 0.0


class Route(pydantic.BaseModel):
    stops: list[Point]
    label: str | None = None


@tool
def plan(
    route: Route, mode: Literal["car", "bike"] = "car", tags: list[str] | None = None, n: int = 1
) -> str:
    """Plan a route.

    Longer text.

    Args:
        route: the stops to visit,
            in order.
        mode (str): how to travel.
        n: how many plans.

    Returns:
        A plan.
    """
    return f"{len(route.stops)} stops by {mode} x{n}"


def _walk(node):
    if isinstance(node, dict):
        yield node
        for v in node.values():
            yield from _walk(v)
    elif isinstance(node, list):
        for v in node:
            yield from _walk(v)


def test_schema_keeps_nested_items_enums_defaults_descriptions_and_has_no_refs():
    schema = plan.schema
    assert schema["type"] == "function"
    fn = schema["function"]
    assert fn["name"] == "plan"
    assert fn["description"] == "Plan a route.\n\nLonger text."
    params = fn["parameters"]
    assert params["required"] == ["route"]
    route = params["properties"]["route"]
    assert route["description"] == "the stops to visit, in order."
    stops = route["properties"]["stops"]
    assert stops["type"] == "array"
    assert stops["items"]["properties"]["x"] == {"description": "east", "type": "number"}
    assert stops["items"]["properties"]["y"]["default"] == 0.0
    assert params["properties"]["mode"] == {
        "default": "car",
        "description": "how to travel.",
        "enum": ["car", "bike"],
        "type": "string",
    }
    assert params["properties"]["n"]["default"] == 1
    text = json.dumps(schema)
    assert "$ref" not in text and "$defs" not in text
    assert all("title" not in node or isinstance(node["title"], dict) for node in _walk(schema))


def test_property_named_title_is_kept():
    @tool
    def book(title: str) -> str:
        """Find a book."""
        return title

    assert book.schema["function"]["parameters"]["properties"]["title"] == {"type": "string"}


def test_recursive_model_schema_terminates():
    class Node(pydantic.BaseModel):
        value: int
        children: list[Node] = []

    @tool
    def tree(root: Node) -> int:
        """Sum a tree."""
        return root.value

    text = json.dumps(tree.schema)
    assert "$ref" not in text and "recursive" in text


def test_valid_call_and_dict_or_json_string():
    good = {"route": {"stops": [{"x": 1}, {"x": 2, "y": 3}]}, "mode": "bike"}
    assert plan.call_sync(good) == ToolResult("2 stops by bike x1")
    assert plan.call_sync(json.dumps(good)).content == "2 stops by bike x1"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"route": {"stops": []}, "n": "abc"}, "argument `n`: expected integer, got 'abc'"),
        ({}, "missing required argument `route`"),
        ({"route": {"stops": [{"y": 1}]}}, "missing required argument `route.stops[0].x`"),
        (
            {"route": {"stops": []}, "mode": "plane"},
            "argument `mode`: expected one of 'car' or 'bike', got 'plane'",
        ),
        ({"route": {"stops": []}, "speed": 3}, "unexpected argument `speed`"),
        ({"route": {"stops": "x"}}, "argument `route.stops`: expected array, got 'x'"),
        ('{"route": ', "arguments are not valid JSON (Expecting value at line 1 column 11)"),
        ("[1, 2]", "arguments must be a JSON object, got array"),
    ],
)
def test_bad_arguments_become_exact_error_results(arguments, message):
    result = plan.call_sync(arguments)
    assert result.is_error
    assert message in result.content
    assert result.content.startswith("tool `plan`: ")


def test_none_or_empty_arguments_mean_no_arguments():
    @tool
    def ping() -> str:
        """Ping."""
        return "pong"

    assert ping.call_sync(None).content == "pong"
    assert ping.call_sync("").content == "pong"
    assert ping.schema["function"]["parameters"]["properties"] == {}


def test_exceptions_system_exit_and_timeouts_never_raise():
    @tool
    def boom(x: int) -> str:
        """Fail."""
        raise ValueError(f"bad x={x}")

    @tool
    def leave() -> str:
        """Exit."""
        raise SystemExit(3)

    @tool(timeout_s=0.05)
    async def slow() -> str:
        """Sleep."""
        await asyncio.sleep(5)
        return "late"

    assert boom.call_sync({"x": 2}) == ToolResult("tool `boom` failed: ValueError: bad x=2", is_error=True)
    assert leave.call_sync({}).content == "tool `leave` failed: SystemExit: 3"
    assert slow.call_sync({}).content == "tool `slow` timed out after 0.05s"


def test_subclass_with_a_plain_def_run_works_as_docs_tools_md_shows():
    class Scale(Tool):
        name = "scale"
        description = "Multiply by a factor."

        class Args(pydantic.BaseModel):
            x: float

        def run(self, args, context):  # a plain def, not async
            if args.x < 0:
                raise SystemExit(2)
            return str(args.x * 2)

    scale = Scale()
    assert scale.call_sync({"x": 1.5}) == ToolResult("3.0")
    assert scale.call_sync({"x": -1}).content == "tool `scale` failed: SystemExit: 2"
    assert scale.call_sync({"x": "a"}).is_error


def test_async_function_context_and_return_conversion():
    @tool(name="ctx", description="Echo context.")
    async def echo(key: str, context: dict | None = None) -> dict:
        return {"value": (context or {}).get(key)}

    assert "context" not in echo.schema["function"]["parameters"]["properties"]
    assert echo.call_sync({"key": "a"}, context={"a": 5}).content == '{"value": 5}'
    assert echo.name == "ctx" and echo.schema["function"]["description"] == "Echo context."


def test_call_sync_inside_running_loop():
    async def main():
        return plan.call_sync({"route": {"stops": []}})

    assert asyncio.run(main()).content == "0 stops by car x1"


def test_long_output_is_cut_with_a_note():
    @tool
    def big() -> str:
        """Big."""
        return "a" * 30_000

    content = big.call_sync({}).content
    assert content.endswith("[... 10000 more characters cut]")


class Counter(Tool):
    """Stateful subclass with a nested Args model."""

    name = "counter"
    description = "Add to a running total."
    stateful = True

    class Args(pydantic.BaseModel):
        add: int = 1

    def __init__(self, start: int = 0):
        self.start = start
        self.init_state()

    def init_state(self):
        self.total = self.start
        self.closed = False

    async def run(self, args, context):
        self.total += args.add
        return ToolResult(str(self.total), reward=0.1, metrics={"total": float(self.total)})

    async def aclose(self):
        self.closed = True


def test_stateful_fork_gives_fresh_state_and_stateless_fork_is_self():
    base = Counter(start=10)
    a, b = base.fork(), base.fork()
    assert a is not b and a is not base
    assert a.call_sync({"add": 2}).content == "12"
    assert a.call_sync({}).content == "13"
    assert b.call_sync({}).content == "11"
    asyncio.run(a.aclose())
    asyncio.run(a.aclose())
    assert a.closed and not b.closed
    assert plan.fork() is plan
    assert Counter.args_model is Counter.Args
    assert base.schema["function"]["parameters"]["properties"]["add"]["default"] == 1


def test_import_tools_is_light():
    import subprocess
    import sys

    code = "import sys, tools, turngym.chat.calls; bad = [m for m in ('fastapi', 'uvicorn', 'sandbox_fusion', 'httpx', 'torch', 'yaml') if m in sys.modules]; print(bad)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    assert tools.Tool is Tool
