"""Tools from YAML (`tools.load_tools(path)`) and from loose specs (names, functions, paths, lists)."""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from typing import Any

from common.registration import load_entry_point
from tools.tool import FunctionTool, Tool, check_tool_name

# Keys verl's tool YAML puts in `config` that are about verl, not the tool.
_VERL_CONFIG_KEYS = {"type"}


class ToolLoadError(ValueError):
    """A tool spec could not be loaded; the message names the file, the entry and the problem."""


def _verl_entry(class_name: str) -> str:
    """verl writes `pkg.module.Class`; turngym's loader takes `pkg.module:Class`."""
    if ":" in class_name:
        return class_name
    module, _, attr = class_name.rpartition(".")
    return f"{module}:{attr}"


def _check_config(cls: type, config: dict[str, Any]) -> None:
    sig = inspect.signature(cls.__init__)
    params = [p for p in sig.parameters.values() if p.name != "self"]
    if any(p.kind == p.VAR_KEYWORD for p in params):
        return
    accepted = [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    unknown = [k for k in config if k not in accepted]
    if unknown:
        raise TypeError(
            f"config key(s) {', '.join(repr(k) for k in unknown)} not accepted by {cls.__name__} "
            f"(accepts: {', '.join(accepted) or 'nothing'})"
        )
    try:
        sig.bind(None, **config)
    except TypeError as exc:
        raise TypeError(f"{cls.__name__} config: {exc}") from None


def make_tool(obj: Any, config: dict[str, Any] | None = None, name: str | None = None) -> Tool:
    """A Tool from a Tool instance, a Tool subclass (built with `config`), a built-in name or a function."""
    config = dict(config or {})
    if isinstance(obj, str):
        from tools.builtin import BUILTINS, builtin_class

        obj = builtin_class(obj) if obj in BUILTINS else load_entry_point(obj)
    if isinstance(obj, Tool):
        if config:
            raise TypeError("`config` given, but the entry is already a Tool instance")
        tool = obj
    elif isinstance(obj, type) and issubclass(obj, Tool):
        _check_config(obj, config)
        tool = obj(**config)
    elif callable(obj):
        if config:
            raise TypeError(
                f"`config` given, but {getattr(obj, '__name__', obj)!r} is a function (only Tool subclasses take config)"
            )
        tool = FunctionTool(obj)
    else:
        raise TypeError(f"expected a Tool subclass, a Tool or a function, got {type(obj).__name__}")
    if name:
        if tool.name != name and not isinstance(obj, type):
            import copy

            tool = copy.copy(tool)
        tool.name = name
    check_tool_name(tool.name)  # a YAML `name:` or a Tool subclass's own, as the model must write it
    return tool


def _entry_label(i: int, item: Any) -> str:
    if isinstance(item, dict):
        for key in ("entry", "class_name", "builtin", "name"):
            if key in item:
                return f"tools[{i}] ({key}: {item[key]})"
    return f"tools[{i}]"


def _from_item(item: Any) -> Tool:
    if isinstance(item, str):
        return make_tool(item)
    if not isinstance(item, dict):
        raise TypeError(f"expected a mapping with `entry`, got {type(item).__name__}")
    if "class_name" in item:  # verl's layout
        return _from_verl(item)
    known = {"entry", "builtin", "name", "config", "description", "timeout_s"}
    extra = sorted(set(item) - known)
    if extra:
        raise TypeError(f"unknown key(s) {', '.join(extra)} (allowed: {', '.join(sorted(known))})")
    target = item.get("entry") or item.get("builtin")
    if not target:
        raise TypeError("missing `entry` (module:attr of a function or Tool subclass, or a built-in name)")
    config = item.get("config") or {}
    if not isinstance(config, dict):
        raise TypeError(f"`config` must be a mapping, got {type(config).__name__}")
    tool = make_tool(target, config, item.get("name"))
    if "description" in item:
        tool.description = str(item["description"])
    if "timeout_s" in item:
        tool.timeout_s = None if item["timeout_s"] is None else float(item["timeout_s"])
    return tool


def _from_verl(item: dict[str, Any]) -> Tool:
    config = {k: v for k, v in (item.get("config") or {}).items() if k not in _VERL_CONFIG_KEYS}
    cls = load_entry_point(_verl_entry(item["class_name"]))
    schema = item.get("tool_schema")
    if isinstance(cls, type) and issubclass(cls, Tool):
        fn_schema = (schema or {}).get("function", {}) if isinstance(schema, dict) else {}
        tool = make_tool(cls, config, fn_schema.get("name"))
        if fn_schema.get("description"):
            tool.description = fn_schema["description"]
        return tool
    if not isinstance(schema, dict) or "function" not in schema:
        raise TypeError("verl tool entry needs `tool_schema` with a `function`")
    from tools.verl_adapter import VerlToolAdapter

    return VerlToolAdapter(cls, dict(item.get("config") or {}), schema)


def load_tools(path: str | os.PathLike) -> list[Tool]:
    """Tools listed in a YAML file (turngym's `entry` layout or verl's `class_name` layout)."""
    import yaml

    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as fh:
            data = yaml.safe_load(fh)
    except OSError as exc:
        raise ToolLoadError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise ToolLoadError(f"{path}: invalid YAML: {exc}") from None
    if data is None:
        return []
    items = data.get("tools") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise ToolLoadError(f"{path}: expected a top-level `tools:` list")
    tools: list[Tool] = []
    seen: dict[str, str] = {}
    for i, item in enumerate(items):
        label = _entry_label(i, item)
        try:
            tool = _from_item(item)
        except ToolLoadError:
            raise
        except ImportError as exc:
            raise ToolLoadError(f"{path}: {label}: import failed: {exc}") from exc
        except Exception as exc:
            raise ToolLoadError(f"{path}: {label}: {exc}") from exc
        if tool.name in seen:
            raise ToolLoadError(
                f"{path}: {label}: duplicate tool name {tool.name!r} (already defined by {seen[tool.name]})"
            )
        seen[tool.name] = label
        tools.append(tool)
    return tools


ToolSpec = Tool | str | Callable[..., Any] | dict | os.PathLike | list


def resolve_tools(spec: Any) -> list[Tool]:
    """Tools from a loose spec: None, a Tool, a function, a built-in name, a YAML path, a dict entry, or a list."""
    if spec is None:
        return []
    if isinstance(spec, (list, tuple)):
        out: list[Tool] = []
        for s in spec:
            out.extend(resolve_tools(s))
        return out
    if isinstance(spec, os.PathLike) or (isinstance(spec, str) and spec.endswith((".yaml", ".yml"))):
        return load_tools(spec)
    if isinstance(spec, dict):
        try:
            return [_from_item(spec)]
        except Exception as exc:
            raise ToolLoadError(f"{_entry_label(0, spec)}: {exc}") from exc
    return [make_tool(spec)]
