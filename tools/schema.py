"""OpenAI function schemas from pydantic models: `$ref`s inlined, nested structure kept."""

from __future__ import annotations

import copy
from typing import Any

import pydantic

# Keys whose values are a single sub-schema.
_SUBSCHEMA_KEYS = ("items", "additionalProperties", "not", "contains", "propertyNames", "if", "then", "else")
# Keys whose values are a list of sub-schemas.
_SUBSCHEMA_LIST_KEYS = ("anyOf", "oneOf", "allOf", "prefixItems")


def _resolve(node: Any, defs: dict[str, Any], seen: tuple[str, ...]) -> Any:
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        ref = node["$ref"]
        name = ref.rsplit("/", 1)[-1]
        if name in seen:
            # Recursive model: an inline expansion would be infinite, so describe it instead.
            return {"type": "object", "description": f"(recursive {name})"}
        target = _resolve(copy.deepcopy(defs[name]), defs, (*seen, name))
        extra = {k: v for k, v in node.items() if k != "$ref"}
        return {**target, **_clean(extra, defs, seen)} if extra else target
    return _clean(node, defs, seen)


def _clean(node: dict[str, Any], defs: dict[str, Any], seen: tuple[str, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("$defs", "definitions", "title"):
            continue
        if key == "properties" and isinstance(value, dict):
            out[key] = {prop: _resolve(sub, defs, seen) for prop, sub in value.items()}
        elif key in _SUBSCHEMA_KEYS and isinstance(value, dict):
            out[key] = _resolve(value, defs, seen)
        elif key in _SUBSCHEMA_LIST_KEYS and isinstance(value, list):
            out[key] = [_resolve(sub, defs, seen) for sub in value]
        else:
            out[key] = value
    # pydantic renders a single-member `allOf` around a `$ref` with a default; flatten it.
    if list(out.get("allOf", [])) and len(out["allOf"]) == 1:
        inner = out.pop("allOf")[0]
        out = {**inner, **out}
    # `Literal["a"]` gives `const`; models handle `enum` better.
    if "const" in out and "enum" not in out:
        out["enum"] = [out.pop("const")]
    return out


def parameters_schema(model: type[pydantic.BaseModel]) -> dict[str, Any]:
    """JSON schema of `model` as OpenAI `parameters`: no `$ref`/`$defs`/titles, always `properties`."""
    raw = model.model_json_schema()
    defs = raw.get("$defs", {})
    schema = _resolve(raw, defs, ())
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    return schema


def function_schema(name: str, description: str, model: type[pydantic.BaseModel]) -> dict[str, Any]:
    """The OpenAI tool schema `{"type": "function", "function": {...}}`."""
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters_schema(model)},
    }
