"""The verl release turngym is written against, and the start-up check that the installed one is it.

turngym extends verl through its registries, its task runner and a few private trainer methods
(``trainer/task_runner.py``); another release may rename any of them, so ``python -m trainer.run``
refuses to start on any other version, before anything is written or Ray starts.
"""

from __future__ import annotations

import importlib.metadata

SUPPORTED_VERL = "0.9.1"


def installed_verl_version() -> str | None:
    """The version of the installed `verl` distribution (None when it is not installed)."""
    try:
        return importlib.metadata.version("verl")
    except importlib.metadata.PackageNotFoundError:
        return None


def verl_version_problem() -> str | None:
    """One line saying what is wrong with the installed verl, or None when it is the supported release."""
    installed = installed_verl_version()
    if installed is None:
        return f"verl is not installed; turngym trains with verl=={SUPPORTED_VERL}: pip install -e '.[train]'"
    if installed != SUPPORTED_VERL:
        return (
            f"verl {installed} is installed, but turngym supports verl=={SUPPORTED_VERL} only (it extends "
            f"verl's trainer internals); pip install 'verl[verl-core]=={SUPPORTED_VERL}' or pip install -e '.[train]'"
        )
    return None
