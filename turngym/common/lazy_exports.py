"""`lazy_exports`: a package's names loaded on first attribute access (PEP 562 `__getattr__`).

Several packages (`rollout`, `tools`, `turngym.engines`) export names whose modules pull heavy imports
(torch, transformers, pydantic); importing the package must stay light, so each name's module is
imported only when the name is first read, and the value is then cached in the package's namespace
(later reads do not reach `__getattr__` again).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str,
    exports: Mapping[str, str],
    namespace: dict[str, Any],
    fallback: Callable[[str], Any] | None = None,
) -> Callable[[str], Any]:
    """A module-level `__getattr__` that imports each exported name from its module on first use.

    Args:
        package: the package's dotted name, for the error message (`module 'rollout' has no ...`).
        exports: exported name -> the dotted module that defines it.
        namespace: the package's `globals()`; a loaded name is stored there, so it loads once.
        fallback: called with a name not in `exports` before the AttributeError is raised; what it
            returns is the attribute (it raises AttributeError itself, or returns None to let the
            default error stand).

    Returns:
        The function to assign to the package's `__getattr__`.

    >>> import types
    >>> pkg = types.ModuleType("pkg")
    >>> pkg.__getattr__ = lazy_exports("pkg", {"dedent": "textwrap"}, vars(pkg))
    >>> pkg.__getattr__("dedent")("  x")
    'x'
    >>> "dedent" in vars(pkg)
    True
    >>> pkg.__getattr__("nothing")
    Traceback (most recent call last):
    ...
    AttributeError: module 'pkg' has no attribute 'nothing'
    """

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            found = fallback(name) if fallback is not None else None
            if found is not None:
                return found
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    return __getattr__
