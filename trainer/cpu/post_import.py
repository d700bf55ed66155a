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
            hooks = _pending.pop(fullname, [])
            if not _pending:
                # Every import consults sys.meta_path; with nothing left to watch the finder only costs
                # time. Removed before the hooks run, so a hook that watches another module puts it back.
                _uninstall()
            for hook in hooks:
                hook(module)

        loader.exec_module = exec_module  # per-spec loader instance: affects this import only
        return spec


_finder = _PostImportFinder()


def _uninstall() -> None:
    # Not `remove` on a list that may hold the finder twice or not at all (another tool may edit
    # sys.meta_path): every copy goes, a missing one is fine.
    sys.meta_path[:] = [finder for finder in sys.meta_path if finder is not _finder]


def when_imported(module_name: str, hook: Callable[[ModuleType], None]) -> None:
    """Call ``hook(module)`` once ``module_name`` is imported (immediately if it already is).

    The finder that watches imports sits in ``sys.meta_path`` only while a hook is pending: it takes
    itself out once the last watched module has been imported.

    Args:
        module_name: the module's dotted name.
        hook: what to run with the module object, right after its body ran.
    """
    module = sys.modules.get(module_name)
    if module is not None:
        hook(module)
        return
    _pending.setdefault(module_name, []).append(hook)
    if _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)
