"""Loads the env's own template modules (correct or with an injected bug) in this process.

Only text the env wrote itself comes here, never the agent's: it is how the generator computes the
hidden tests' expected values and checks that an injected bug really breaks a visible and a hidden test.
"""

from __future__ import annotations

import re
import types
from functools import lru_cache

_RELATIVE_IMPORT = re.compile(r"^from \. import (\w+)[ \t]*$", re.MULTILINE)


@lru_cache(maxsize=256)
def load_modules(sources: tuple[tuple[str, str], ...]) -> dict[str, types.ModuleType]:
    """Module objects from (name, source) pairs in dependency order; `from . import x` binds loaded `x`."""
    loaded: dict[str, types.ModuleType] = {}
    for name, source in sources:
        module = types.ModuleType(f"_repo_fix_trusted.{name}")
        for dep in _RELATIVE_IMPORT.findall(source):
            if dep not in loaded:
                raise ValueError(f"template {name} imports {dep}, which is not loaded before it")
            setattr(module, dep, loaded[dep])
        code = compile(_RELATIVE_IMPORT.sub("", source), f"<repo-fix template {name}>", "exec")
        exec(code, module.__dict__)  # noqa: S102 - the env's own template text, never model output
        loaded[name] = module
    return loaded
