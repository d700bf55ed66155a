"""The env ids a command line names, checked before Hydra composes the config (which imports verl).

A misspelled group (``env=guess-numbr``) was refused in 0.4 s; a misspelled or unregistered id
(``env.id=guess-numbr-v0``) only after composing, which imports verl, torch and Ray through verl's config
search path: 10-15 s, and minutes on a loaded machine. The registry is light (``import envs``), so the ids
an override gives (``env.id=...``) are looked up here first, after importing the modules
``turngym.import_modules=[...]`` names (envs of the user's own register there). What cannot be read
without Hydra (an interpolation, a list in Hydra's richer syntax) is left to ``compose.check_config``,
which checks every id of the composed config as before.
"""

from __future__ import annotations

import re

from trainer.checks.config_error import ConfigError

_PLAIN_NAME = re.compile(r"^[A-Za-z0-9_.:/-]+$")


def _value(overrides: list[str], key: str) -> str | None:
    """The last value ``key=...`` (or ``+key=...``/``++key=...``) is given, or None."""
    found = None
    for override in overrides:
        name, sep, value = override.partition("=")
        if sep and name.lstrip("+") == key:
            found = value
    return found


def _plain_list(value: str) -> list[str] | None:
    """``[a, b.c]`` or ``a`` as names; None for anything needing Hydra's parser (quotes, interpolations)."""
    inner = value.strip()
    if inner.startswith("[") and inner.endswith("]"):
        inner = inner[1:-1]
    names = [part.strip() for part in inner.split(",") if part.strip()]
    return names if all(_PLAIN_NAME.match(n) for n in names) else None


def unregistered_env_message(env_id: str, known: set[str], group: str | None = None) -> str:
    """The one line for an env id the registry does not hold: the closest ids, and how to add your own.

    Args:
        env_id: the id given.
        known: the registered ids.
        group: the env group (``env=<group>``) that lists the id, if one does.

    Returns:
        ``env 'X' is not registered; did you mean Y? (envs of your own: turngym.import_modules=[...])``.

    Example:
        >>> unregistered_env_message("guess-numbr-v0", {"guess-number-v0", "wordle-v0"})
        "env 'guess-numbr-v0' is not registered; did you mean guess-number-v0? (envs of your own: turngym.import_modules=[my_pkg.my_envs])"
    """
    from turngym.common.cli_errors import did_you_mean

    hint = did_you_mean(env_id, known) or f"`python -m envs list` shows all {len(known)}"
    where = f" (group {group!r})" if group else ""
    return (
        f"env {env_id!r}{where} is not registered; {hint} (envs of your own: "
        "turngym.import_modules=[my_pkg.my_envs])"
    )


def check_env_ids_early(overrides: list[str]) -> None:
    """Refuse an override's unregistered env id before anything heavy is imported.

    Args:
        overrides: the command line's overrides as given (``env.id=...``, ``turngym.import_modules=[...]``).

    Raises:
        ConfigError: ``env.id`` names no registered env (after the ``turngym.import_modules`` were imported).
    """
    env_id = _value(overrides, "env.id")
    if env_id is None or not _PLAIN_NAME.match(env_id):
        return  # none given, or an interpolation: compose.check_config checks the composed id
    modules = _plain_list(_value(overrides, "turngym.import_modules") or "[]")
    if modules is None:
        return  # only Hydra reads this list right; the ids are checked after composing
    from trainer.checks.user_modules import import_user_modules

    import_user_modules(modules)
    import envs

    known = {spec.id for spec in envs.list_envs()}
    if env_id not in known:
        raise ConfigError(unregistered_env_message(env_id, known))
