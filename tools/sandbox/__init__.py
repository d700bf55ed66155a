"""Code sandboxes: `LocalSandbox` (bubblewrap + seccomp + uid + per-run cgroup), `FusionSandbox` (SandboxFusion HTTP)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tools.sandbox.backend import Sandbox, make_sandbox
from tools.sandbox.result import SandboxResult

if TYPE_CHECKING:
    from tools.sandbox.fusion import FusionSandbox
    from tools.sandbox.local import LocalSandbox
    from tools.sandbox.session import PythonSession

__all__ = ["FusionSandbox", "LocalSandbox", "PythonSession", "Sandbox", "SandboxResult", "make_sandbox"]

_LAZY = {
    "LocalSandbox": "tools.sandbox.local",
    "FusionSandbox": "tools.sandbox.fusion",
    "PythonSession": "tools.sandbox.session",
}


def __getattr__(name: str) -> Any:
    # Lazy so `import tools` stays light (the Fusion client pulls an HTTP stack).
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'tools.sandbox' has no attribute {name!r}")
