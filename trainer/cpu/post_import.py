"""Run a function right after a module is first imported (or now, if it already is).

verl binds many names with ``from x import y`` at import time, so a patch must land on the
defining module before any importer reads it. A meta-path finder gives us that moment
without importing heavy verl modules eagerly from the plugin.
"""

from __future__ import annotations

import importlib.abc
import sys
from collections.abc import Callable
from types import ModuleType

_pending: dict[str, list[Callable[[ModuleType], None]]] = {}


class _PostImportFinder(importlib.abc.MetaPathFinder):
    """Wraps the real loader of watched modules so hooks run after the module body."""

    def find_spec(self, fullname, path, target=None):
        if fullname not in _pending:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        real_exec = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            real_exec(module)
            for hook in _pending.pop(fullname, []):
                hook(module)

        loader.exec_module = exec_module  # per-spec loader instance: affects this import only
        return spec


_finder = _PostImportFinder()


def when_imported(module_name: str, hook: Callable[[ModuleType], None]) -> None:
    """Call ``hook(module)`` once ``module_name`` is imported (immediately if it already is)."""
    module = sys.modules.get(module_name)
    if module is not None:
        hook(module)
        return
    _pending.setdefault(module_name, []).append(hook)
    if _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)
