"""What a sandbox must not see: every copy of turngym's hidden data inside the directories it mounts.

bubblewrap binds /usr (and the sandbox Python's prefix when it lives elsewhere) read-only. A normal
install puts turngym there: `pip install` into a system Python or a venv under /usr/local or /opt, a
source checkout under /usr/src, a build/ dir, a bytecode cache tree (PYTHONPYCACHEPREFIX) or a wheel
or sdist file. Each carries the graders' secrets (envs/code/data/problems.jsonl with the hidden tests,
envs/repo_fix templates and catalogue). `hidden_paths` walks the mounted directories once per process
and returns every such place; bwrap_argv covers each directory with an empty read-only tmpfs and each
file with /dev/null. What is found:

- an `envs` package directory with a `code` or `repo_fix` subpackage (an installed copy, build/lib, a
  bytecode cache tree): that `envs` directory; when its parent is a source tree (pyproject.toml,
  setup.py or .git beside it) the whole tree, so tests, .git objects and build output go too;
- a turngym wheel, sdist or egg file (`turngym-*.whl`, `.tar.gz`, `.zip`, `.egg`): that file.

The dist-info (names and hashes only) and the console script stay visible; neither holds a secret.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass

_SECRET_SUBPACKAGES = ("code", "repo_fix")
_TREE_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")
_ARCHIVE_SUFFIXES = (".whl", ".tar.gz", ".tgz", ".zip", ".egg")


@dataclass(frozen=True)
class HiddenPaths:
    """Where the secrets are under the mounted roots: directories and files to cover, and the roots
    walked (for reports)."""

    dirs: tuple[str, ...]
    files: tuple[str, ...]
    roots: tuple[str, ...]


_cache: dict[tuple[str, ...], HiddenPaths] = {}
_lock = threading.Lock()


def hidden_paths(roots: tuple[str, ...]) -> HiddenPaths:
    """Every directory and file under `roots` that holds turngym's hidden data (walked once per process
    and set of roots; symlinks are not followed, their targets are found where they really are)."""
    key = tuple(sorted({os.path.realpath(r) for r in roots if os.path.isdir(r)}))
    with _lock:
        if key not in _cache:
            _cache[key] = _scan(key)
        return _cache[key]


def _scan(roots: tuple[str, ...]) -> HiddenPaths:
    dirs: set[str] = set()
    files: set[str] = set()
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            if "envs" in dirnames and _holds_secrets(os.path.join(dirpath, "envs")):
                if any(m in dirnames or m in filenames for m in _TREE_MARKERS) and dirpath not in roots:
                    dirs.add(dirpath)
                    dirnames[:] = []  # the whole tree is covered
                    continue
                dirs.add(os.path.join(dirpath, "envs"))
                dirnames.remove("envs")
            for name in filenames:
                if name.startswith("turngym-") and name.endswith(_ARCHIVE_SUFFIXES):
                    files.add(os.path.join(dirpath, name))
    # A directory inside another one already covered needs no mount of its own.
    kept = sorted(d for d in dirs if not any(d.startswith(o + os.sep) for o in dirs))
    return HiddenPaths(tuple(kept), tuple(sorted(files)), roots)


def _holds_secrets(envs_dir: str) -> bool:
    try:
        return any(os.path.isdir(os.path.join(envs_dir, sub)) for sub in _SECRET_SUBPACKAGES)
    except OSError:
        return True  # unreadable to us: cover it rather than guess


def clear_cache() -> None:
    """Forget the walks (after installing or removing turngym somewhere the sandbox mounts)."""
    with _lock:
        _cache.clear()
