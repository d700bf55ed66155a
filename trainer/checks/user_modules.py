"""``turngym.import_modules``: the user's modules (e.g. ones registering envs), imported so checks see them."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

from trainer.checks.config_error import ConfigError

# The turngym checkout (for `examples.*`): trainer/ sits in it.
_CHECKOUT = Path(__file__).resolve().parent.parent


def import_user_modules(modules: list[str]) -> None:
    """Import ``turngym.import_modules`` (e.g. modules registering custom envs) so checks can see them.

    Args:
        modules: module names, as ``turngym.import_modules`` lists them.

    Raises:
        ConfigError: a module cannot be imported (one line with the import error).
    """
    # Resolved like in the Ray workers (trainer.run puts both on their PYTHONPATH): the working
    # directory first, then the turngym checkout.
    for root in (str(_CHECKOUT), str(Path.cwd())):
        if modules and root not in sys.path:
            sys.path.insert(0, root)
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise ConfigError(f"turngym.import_modules: cannot import {module!r}: {exc}") from exc
