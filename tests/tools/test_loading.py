"""YAML loading, verl's layout, error messages, ToolRegistry and resolve_tools."""

from __future__ import annotations

import asyncio
import os
import sys

import pytest

import tools
from tools import ToolRegistry
from tools.loading import ToolLoadError, load_tools, resolve_tools

sys.path.insert(0, os.path.dirname(__file__))


def _yaml(tmp_path, text: str) -> str:
    path = tmp_path / "tools.yaml"
    path.write_text(text)
    return str(path)


def test_load_turngym_layout(tmp_path):
    path = _yaml(
        tmp_path,
        """
tools:
  - entry: fixtures.geo:distance
    name: dist
  - entry: fixtures.geo:Scale
    config: {factor: 2, unit: mi}
  - entry: calculator
  - builtin: submit
""",
    )
    loaded = load_tools(path)
    assert [t.name for t in loaded] == ["dist", "scale", "calculator", "submit"]
    assert loaded[0].call_sync({"x1": 0, "y1": 0, "x2": 3, "y2": 4}).content == "5.0"
    assert loaded[1].call_sync({"value": 1.5}).content == "3 mi"
    assert loaded[0].schema["function"]["parameters"]["properties"]["x1"]["description"] == "first x."


def test_load_verl_layout_with_our_tool_class(tmp_path):
    path = _yaml(
        tmp_path,
        """
tools:
  - class_name: fixtures.geo.Scale
    config: {type: native, factor: 10}
    tool_schema:
      type: function
      function: {name: times_ten, description: Multiply by ten., parameters: {type: object, properties: {}}}
""",
    )
    (t,) = load_tools(path)
    assert t.name == "times_ten" and t.description == "Multiply by ten."
    assert t.call_sync({"value": 2}).content == "20 km"


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ("tools:\n  - name: x\n", "tools[0] (name: x): missing `entry`"),
        (
            "tools:\n  - entry: no_such_module_xyz:thing\n",
            "tools[0] (entry: no_such_module_xyz:thing): import failed: No module named 'no_such_module_xyz'",
        ),
        ("tools:\n  - entry: fixtures.geo:missing\n", "has no attribute 'missing'"),
        (
            "tools:\n  - entry: fixtures.geo:distance\n  - entry: fixtures.geo:distance\n",
            "tools[1] (entry: fixtures.geo:distance): duplicate tool name 'distance' (already defined by tools[0]",
        ),
        (
            "tools:\n  - entry: fixtures.geo:Scale\n    config: {speed: 3}\n",
            "config key(s) 'speed' not accepted by Scale (accepts: factor, unit)",
        ),
        ("tools:\n  - entry: fixtures.geo:distance\n    config: {a: 1}\n", "is a function"),
        ("tools:\n  - entry: fixtures.geo:not_a_tool\n", "expected a Tool subclass"),
        ("tools:\n  - entry: calculator\n    colour: red\n", "unknown key(s) colour"),
        ("tools: [unclosed\n", "invalid YAML"),
        ("other: 1\n", "expected a top-level `tools:` list"),
    ],
)
def test_bad_yaml_names_file_entry_and_problem(tmp_path, body, fragment):
    path = _yaml(tmp_path, body)
    with pytest.raises(ToolLoadError) as info:
        load_tools(path)
    assert str(info.value).startswith(path)
    assert fragment in str(info.value)


def test_missing_file():
    with pytest.raises(ToolLoadError, match="nope.yaml: cannot read"):
        load_tools("nope.yaml")


def test_registry_calls_forks_and_unknown_names():
    reg = ToolRegistry([tools.get_builtin("calculator"), tools.get_builtin("python_session")])
    assert reg.names == ["calculator", "python"]
    assert [s["function"]["name"] for s in reg.schemas()] == ["calculator", "python"]
    res = reg.call_sync("nope", {})
    assert res.is_error and res.content == "unknown tool `nope`; available tools: calculator, python"
    episode = reg.fork()
    assert episode["calculator"] is reg["calculator"]
    assert episode["python"] is not reg["python"]
    with pytest.raises(ValueError, match="duplicate tool name 'calculator'"):
        reg.register(tools.get_builtin("calculator"))
    asyncio.run(episode.aclose())
    asyncio.run(episode.aclose())


def test_resolve_tools_accepts_loose_specs(tmp_path):
    path = _yaml(tmp_path, "tools:\n  - entry: submit\n")

    @tools.tool
    def echo(text: str) -> str:
        """Echo."""
        return text

    got = resolve_tools(
        [echo, "calculator", path, {"entry": "fixtures.geo:Scale", "config": {"factor": 3}}, None]
    )
    assert [t.name for t in got] == ["echo", "calculator", "submit", "scale"]
    assert resolve_tools(None) == []
