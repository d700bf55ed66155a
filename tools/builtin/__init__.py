"""Built-in tools by name: `get_builtin("calculator")`."""

from __future__ import annotations

import importlib
from typing import Any

from tools.tool import Tool

BUILTINS: dict[str, str] = {
    "calculator": "tools.builtin.calculator:Calculator",
    "search": "tools.builtin.search:Search",
    "submit": "tools.builtin.submit:Submit",
    "python": "tools.builtin.python:PythonTool",
    "python_session": "tools.builtin.python:PythonSessionTool",
}


def builtin_class(name: str) -> type[Tool]:
    """The Tool class registered under `name`."""
    if name not in BUILTINS:
        raise KeyError(f"unknown built-in tool {name!r}; built-ins: {', '.join(sorted(BUILTINS))}")
    module, attr = BUILTINS[name].split(":")
    return getattr(importlib.import_module(module), attr)


def get_builtin(name: str, **config: Any) -> Tool:
    """A new instance of the built-in tool `name`, constructed with `config`."""
    return builtin_class(name)(**config)


def list_builtins() -> list[str]:
    """Names of the built-in tools."""
    return sorted(BUILTINS)


__all__ = ["BUILTINS", "builtin_class", "get_builtin", "list_builtins"]
