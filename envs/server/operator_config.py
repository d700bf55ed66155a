"""What the operator of `python -m envs serve` sets: per-env kwargs clients cannot change.

`--env-kwargs ID:KEY=VALUE` (repeatable) and `--env-config FILE` (YAML or JSON: `{env id: {kwarg: value}}`)
are read and checked before the server starts: an unknown id, a malformed item or an env that cannot be
built with its kwargs is one line and exit status 2.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import envs


class OperatorConfigError(ValueError):
    """The server's own settings are wrong; the message says which and what to do."""


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def parse_env_kwargs(items: list[str]) -> dict[str, dict[str, Any]]:
    """`["code-sandbox-v0:isolation=bwrap", ...]` as `{env id: {kwarg: value}}` (values JSON when they parse).

    Args:
        items: the `--env-kwargs` arguments.

    Returns:
        The kwargs per env id.
    """
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        env_id, colon, assignment = item.partition(":")
        key, equals, value = assignment.partition("=")
        if not colon or not env_id or not equals or not key:
            raise OperatorConfigError(
                f"--env-kwargs {item!r} must look like ID:KEY=VALUE, e.g. code-sandbox-v0:isolation=bwrap"
            )
        out.setdefault(env_id, {})[key] = _value(value)
    return out


def load_env_config(path: str | Path) -> dict[str, dict[str, Any]]:
    """`--env-config FILE`: a YAML (or JSON) mapping of env id to its operator kwargs.

    Args:
        path: the file.

    Returns:
        The kwargs per env id.
    """
    import yaml

    path = Path(path).expanduser()
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise OperatorConfigError(f"--env-config {path}: cannot read it ({exc.strerror})") from None
    except yaml.YAMLError as exc:
        raise OperatorConfigError(f"--env-config {path}: not YAML ({' '.join(str(exc).split())})") from None
    if data is None:
        return {}
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise OperatorConfigError(
            f"--env-config {path}: must map env ids to kwargs, e.g. 'code-sandbox-v0: {{isolation: bwrap}}'"
        )
    return {str(k): {str(n): v for n, v in kw.items()} for k, kw in data.items()}


def operator_kwargs(env_config: str | Path | None, items: list[str]) -> dict[str, dict[str, Any]]:
    """The operator's kwargs per env, from `--env-config` then `--env-kwargs`, each env built once to check.

    Args:
        env_config: the `--env-config` file, or None.
        items: the `--env-kwargs` arguments.

    Returns:
        `{env id: kwargs}` for the server (`create_app(operator_kwargs=...)`).
    """
    merged = load_env_config(env_config) if env_config is not None else {}
    for env_id, kwargs in parse_env_kwargs(items).items():
        merged[env_id] = {**merged.get(env_id, {}), **kwargs}
    for env_id, kwargs in merged.items():
        try:
            envs.spec(env_id)
        except envs.UnknownEnvError as exc:
            raise OperatorConfigError(f"--env-kwargs / --env-config: {exc}") from None
        try:
            envs.make(env_id, **kwargs).close()
        except Exception as exc:  # noqa: BLE001 - any failure is the operator's to fix, in one line
            raise OperatorConfigError(
                f"{env_id} cannot be built with the operator's kwargs {kwargs}: {type(exc).__name__}: "
                f"{' '.join(str(exc).split())}"
            ) from None
    return merged
