"""Built-in tools by name: `get_builtin("calculator")`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from turngym.common.registration import EntrySpec, Registry

if TYPE_CHECKING:
    from tools.tool import Tool

#: The built-in tools by name (a `turngym.common.registration.Registry` of Tool classes).
BUILTINS: Registry[EntrySpec] = Registry(
    "built-in tool", listing=lambda r: f"built-ins: {', '.join(r.names)}."
)
BUILTINS.register("calculator", "tools.builtin.calculator:Calculator")
BUILTINS.register("search", "tools.builtin.search:Search")
BUILTINS.register("submit", "tools.builtin.submit:Submit")
BUILTINS.register("python", "tools.builtin.python:PythonTool")
BUILTINS.register("python_session", "tools.builtin.python:PythonSessionTool")


def builtin_class(name: str) -> type[Tool]:
    """The Tool class registered under `name`."""
    return BUILTINS.spec(name).load()


def get_builtin(name: str, **config: Any) -> Tool:
    """A new instance of the built-in tool `name`, constructed with `config`."""
    return BUILTINS.make(name, **config)


def list_builtins() -> list[str]:
    """Names of the built-in tools."""
    return BUILTINS.names


__all__ = ["BUILTINS", "builtin_class", "get_builtin", "list_builtins"]
