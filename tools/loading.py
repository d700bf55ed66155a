"""Tools from YAML (`tools.load_tools(path)`) and from loose specs (names, functions, paths, lists)."""

from __future__ import annotations

import copy
import inspect
import os
from collections.abc import Callable
from typing import Any

import pydantic

from tools.tool import FunctionTool, Tool, check_tool_name
from turngym.common.registration import load_entry_point

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


def _check_config(cls: type, config: dict[str, Any]) -> dict[str, Any]:
    """`config` checked against `cls.__init__`'s parameters and type hints, as the hints make the values.

    A key the constructor does not take, a missing required one or a value of the wrong type raises
    TypeError in one line, at load, instead of a tool that fails on every call.
    """
    from tools.tool import config_model, format_validation_error

    sig = inspect.signature(cls.__init__)
    # A class without its own constructor (object's: *args, **kwargs) takes no config at all.
    params = [p for p in sig.parameters.values() if p.name != "self" and cls.__init__ is not object.__init__]
    accepted = [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    if not any(p.kind == p.VAR_KEYWORD for p in params):
        unknown = [k for k in config if k not in accepted]
        if unknown:
            raise TypeError(
                f"config key(s) {', '.join(repr(k) for k in unknown)} not accepted by {cls.__name__} "
                f"(accepts: {', '.join(accepted) or 'nothing'})"
            )
    model = config_model(cls.__init__, accepted)
    named = {k: v for k, v in config.items() if k in accepted}
    try:
        checked = model.model_validate(named)
    except pydantic.ValidationError as exc:
        raise TypeError(format_validation_error(exc, what=f"{cls.__name__} config key")) from None
    # Only the keys given: the constructor's own defaults stay its own.
    return {**config, **{k: getattr(checked, k) for k in named}}


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
        tool = obj(**_check_config(obj, config))
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
    known = {"entry", "builtin", "name", "config", *TOOL_FIELDS}
    extra = sorted(set(item) - known)
    if extra:
        raise TypeError(f"unknown key(s) {', '.join(extra)} (allowed: {', '.join(sorted(known))})")
    target = item.get("entry") or item.get("builtin")
    if not target:
        raise TypeError("missing `entry` (module:attr of a function or Tool subclass, or a built-in name)")
    config = item.get("config") or {}
    if not isinstance(config, dict):
        raise TypeError(f"`config` must be a mapping, got {type(config).__name__}")
    name = item.get("name")
    if name is not None and not isinstance(name, str):
        raise TypeError(f"`name` must be a string, got {_shown(name)}")
    fields = {key: check(key, item[key]) for key, check in TOOL_FIELDS.items() if key in item}
    tool = make_tool(target, config, name)
    if fields:
        # Copied: the entry may be a Tool instance another file or module shares (a `@tool` function).
        tool = copy.copy(tool)
        for key, value in fields.items():
            setattr(tool, key, value)
    return tool


def _shown(value: Any) -> str:
    return f"{type(value).__name__} {value!r}"[:80]


def _text(key: str, value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"`{key}` must be a string, got {_shown(value)}")
    return value


def _flag(key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"`{key}` must be true or false, got {_shown(value)}")
    return value


def _seconds(key: str, value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise TypeError(f"`{key}` must be a number of seconds > 0 or null (no limit), got {_shown(value)}")
    return float(value)


def _count(key: str, value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise TypeError(f"`{key}` must be a whole number >= 1 or null (no cut), got {_shown(value)}")
    return value


#: The `Tool` fields a YAML entry may set beside `name` (docs/tools.md's table), each with its check:
#: the value as the Tool holds it, or a TypeError saying what is expected. `args_model` is the entry's
#: own (its signature or `Args`).
TOOL_FIELDS: dict[str, Callable[[str, Any], Any]] = {
    "description": _text,
    "stateful": _flag,
    "concurrent": _flag,
    "timeout_s": _seconds,
    "max_output_chars": _count,
}


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
