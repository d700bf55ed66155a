"""Old module paths that keep importing after a move: one table per package, one warning per old path.

A package that moves some of its modules calls `keep_old_paths` in its `__init__` with {old: new}. An
import of an old path (or of a submodule below an old package path) then gives the module at its new path (the same object, so `isinstance` and
identity checks hold), after one `DeprecationWarning` that names the new path. No file is left behind at
the old path, so a package's folder shows only what it holds.

A module that is also run as a command (`python -m old.path`) still needs a file at its old path:
`runpy` executes a module's code, and an alias has none.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from collections.abc import Mapping
from types import ModuleType


class MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """An import hook that answers each old module path with the module at its new path.

    Args:
        moves: {old dotted path: new dotted path}.

    Example:
        >>> import importlib, json, sys, warnings
        >>> hook = MovedModules({"oldplace_demo": "json"})
        >>> sys.meta_path.append(hook)
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     old = importlib.import_module("oldplace_demo")
        >>> old is json, str(caught[0].message)
        (True, 'oldplace_demo moved to json; import it from there')
        >>> sys.meta_path.remove(hook); del sys.modules["oldplace_demo"]
    """

    def __init__(self, moves: Mapping[str, str]):
        self.moves = dict(moves)
        # The top-level packages of the old paths: every other import is answered by one set lookup
        # (the hook sits first on `sys.meta_path`, so it is asked about every module torch or verl loads).
        self._roots = frozenset(old.partition(".")[0] for old in self.moves)

    def new_path(self, fullname: str) -> str | None:
        """Where `fullname` is now: an old path, or a submodule of an old package path (None: not moved)."""
        if fullname.partition(".")[0] not in self._roots:
            return None
        if fullname in self.moves:
            return self.moves[fullname]
        parts = fullname.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            package = ".".join(parts[:cut])
            if package in self.moves:
                return ".".join([self.moves[package], *parts[cut:]])
        return None

    def find_spec(
        self, fullname: str, path: object = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        """A spec for an old path this hook knows (None for every other name: other finders go on)."""
        if self.new_path(fullname) is None:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        """The module at the new path, imported now; the import system files it under the old name too."""
        new = self.new_path(spec.name)
        # stacklevel 2 is the importer: the import system's own frames are skipped by `warnings`.
        warnings.warn(f"{spec.name} moved to {new}; import it from there", DeprecationWarning, stacklevel=2)
        return importlib.import_module(new)

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the module ran when it was imported at its new path."""


def keep_old_paths(moves: Mapping[str, str]) -> MovedModules:
    """Install (once per table) a `MovedModules` hook for `moves`, before the finders already there.

    First, because an old package path aliased to its new package would otherwise let the path finder
    load the new package's submodules a second time under the old name (two module objects, two of
    every class); the hook answers only the old names, so every other import goes on as before.

    Args:
        moves: {old dotted path: new dotted path}, e.g. {"envs.core.text_env": "envs.core.text_env"}.

    Returns:
        The installed hook (the one already installed for an equal table).

    Example:
        >>> hook = keep_old_paths({"oldplace_demo2": "json"})
        >>> hook is keep_old_paths({"oldplace_demo2": "json"}), hook in sys.meta_path
        (True, True)
        >>> sys.meta_path.remove(hook)
    """
    for finder in sys.meta_path:
        if isinstance(finder, MovedModules) and finder.moves == dict(moves):
            return finder
    hook = MovedModules(moves)
    sys.meta_path.insert(0, hook)
    return hook


def all_moves() -> dict[str, str]:
    """{old path: new path} over every installed hook: what a layering check treats as an old path."""
    found: dict[str, str] = {}
    for finder in sys.meta_path:
        if isinstance(finder, MovedModules):
            found.update(finder.moves)
    return found
