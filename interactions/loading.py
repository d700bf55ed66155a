"""`load_interactions(path)`: register interactions described in a YAML file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from interactions.registry import InteractionSpec, register
from turngym.common.registration import EntryPointError


class InteractionConfigError(ValueError):
    """A YAML interaction file is unreadable or an entry in it is wrong (the message says where)."""


def load_interactions(path: str | Path) -> dict[str, InteractionSpec]:
    """Register every interaction in a YAML file; returns {name: spec}.

    Accepted layouts (an optional top-level `interactions:` key around either):

        my-user:                         - name: my-user
          entry: my_pkg.users:MyUser       entry: my_pkg.users:MyUser
          config: {patience: 3}            config: {patience: 3}

    Each entry point is imported now, so a typo fails here with the file and entry named.
    """
    import yaml

    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as e:
        raise InteractionConfigError(f"{path}: cannot read the file ({e.strerror or e})") from None
    except yaml.YAMLError as e:
        raise InteractionConfigError(f"{path}: not valid YAML ({e})") from None
    if isinstance(data, dict) and set(data) == {"interactions"}:
        data = data["interactions"]
    entries = _entries(path, data)
    found: dict[str, InteractionSpec] = {}
    for name, entry in entries:
        checked = _check_entry(path, name, entry)
        found[name] = register(
            name, checked["entry"], source=str(path), **checked["config"], description=checked["description"]
        )
    return found


def _entries(path: Path, data: Any) -> list[tuple[str, Any]]:
    if data is None:
        raise InteractionConfigError(f"{path}: the file is empty; expected interaction entries")
    if isinstance(data, dict):
        return [(str(name), entry) for name, entry in data.items()]
    if isinstance(data, list):
        out = []
        for i, entry in enumerate(data):
            if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
                raise InteractionConfigError(f"{path}: entry #{i}: each list item needs a string `name`")
            out.append((entry["name"], {k: v for k, v in entry.items() if k != "name"}))
        return out
    raise InteractionConfigError(
        f"{path}: expected a mapping of name -> {{entry, config}} or a list of entries, got {type(data).__name__}"
    )


def _check_entry(path: Path, name: str, entry: Any) -> dict[str, Any]:
    where = f"{path}: entry {name!r}"
    if not isinstance(entry, dict):
        raise InteractionConfigError(
            f"{where}: expected a mapping with `entry` and `config`, got {type(entry).__name__}"
        )
    unknown = sorted(set(entry) - {"entry", "config", "description"})
    if unknown:
        raise InteractionConfigError(f"{where}: unknown keys {unknown}; allowed: entry, config, description")
    target = entry.get("entry")
    if not isinstance(target, str) or ":" not in target:
        raise InteractionConfigError(f"{where}: `entry` must be 'module:attr', got {target!r}")
    config = entry.get("config") or {}
    if not isinstance(config, dict):
        raise InteractionConfigError(f"{where}: `config` must be a mapping, got {type(config).__name__}")
    bad_keys = [k for k in config if not isinstance(k, str) or not k.isidentifier()]
    if bad_keys:
        raise InteractionConfigError(f"{where}: config keys must be identifiers, got {bad_keys}")
    probe = InteractionSpec(name, target)
    try:
        factory = probe.load()
    except ModuleNotFoundError as e:
        raise InteractionConfigError(f"{where}: cannot import module for {target!r} ({e})") from None
    except (AttributeError, EntryPointError):
        raise InteractionConfigError(
            f"{where}: {target!r} names nothing: no such attribute in the module"
        ) from None
    except Exception as e:  # importing user code may fail in any way
        raise InteractionConfigError(
            f"{where}: importing {target!r} failed: {type(e).__name__}: {e}"
        ) from None
    if not callable(factory):
        raise InteractionConfigError(f"{where}: {target!r} is not a class or function")
    return {"entry": target, "config": config, "description": str(entry.get("description", ""))}
