"""What a sandbox must not see: every copy of turngym's hidden data inside the directories it mounts.

bubblewrap binds /usr (and the sandbox Python's prefix when it lives elsewhere) read-only. A normal
install puts turngym there: `pip install` into a system Python or a venv under /usr/local or /opt, a
source checkout under /usr/src, a build/ dir, a bytecode cache tree (PYTHONPYCACHEPREFIX) or a wheel
or sdist file. Each carries the graders' secrets (envs/code/data/problems.jsonl with the hidden tests,
envs/repo_fix templates and catalogue). `hidden_paths` walks the mounted directories and returns every
such place; bwrap_argv covers each directory with an empty read-only tmpfs and each file with /dev/null.
A walk is reused only while nothing under the roots changed: an install, a checkout or a wheel placed
anywhere there adds an entry to some directory the walk listed. The walk puts an inotify watch on each
directory before listing it, so checking is one non-blocking read; where inotify is missing or its
watch limit is reached, each listed directory's mtime is compared instead (one stat per directory,
tens of ms on a full /usr). What is found:

- an `envs` package directory with a `code` or `repo_fix` subpackage (an installed copy, build/lib, a
  bytecode cache tree): that `envs` directory; when its parent is a source tree (pyproject.toml,
  setup.py or .git beside it) the whole tree, so tests, .git objects and build output go too;
- a turngym wheel, sdist or egg file (`turngym-*.whl`, `.tar.gz`, `.zip`, `.egg`): that file.

The dist-info (names and hashes only) and the console script stay visible; neither holds a secret.
"""

from __future__ import annotations

import os
import threading
import time
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


@dataclass
class _Walk:
    found: HiddenPaths
    # Every directory listed and its mtime when it was listed (taken before the listing, so an entry
    # added while the walk ran moves it past what is recorded here).
    listed: tuple[tuple[str, int], ...]
    # A directory changed within the filesystem's timestamp granularity of its stat: a later change
    # could carry the same mtime, so without a watch this walk is used once and not reused.
    recent: bool
    watch: _Watch | None


_cache: dict[tuple[str, ...], _Walk] = {}
_lock = threading.Lock()
_RECENT_NS = 2_000_000_000


def hidden_paths(roots: tuple[str, ...]) -> HiddenPaths:
    """Every directory and file under `roots` that holds turngym's hidden data (symlinks are not
    followed, their targets are found where they really are). The last walk of the same roots is
    reused while nothing under them changed; any change walks again."""
    key = tuple(sorted({os.path.realpath(r) for r in roots if os.path.isdir(r)}))
    with _lock:
        walk = _cache.get(key)
        if walk is None or not _unchanged(walk):
            if walk is not None and walk.watch is not None:
                walk.watch.close()
            walk = _scan(key)
            _cache[key] = walk
        return walk.found


def _unchanged(walk: _Walk) -> bool:
    if walk.watch is not None:
        return not walk.watch.changed()
    if walk.recent:
        return False
    for path, mtime in walk.listed:
        try:
            if os.stat(path, follow_symlinks=False).st_mtime_ns != mtime:
                return False
        except OSError:
            return False
    return True


class _Watch:
    """One inotify instance watching directories for entries created, removed or renamed."""

    # IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF,
    # IN_ONLYDIR | IN_DONT_FOLLOW
    _MASK = 0x100 | 0x200 | 0x40 | 0x80 | 0x400 | 0x800 | 0x01000000 | 0x02000000

    def __init__(self) -> None:
        import ctypes
        import ctypes.util

        self._libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        self._fd = self._libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self._fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        self._pid = os.getpid()

    def add(self, path: str) -> bool:
        return self._libc.inotify_add_watch(self._fd, os.fsencode(path), self._MASK) >= 0

    def changed(self) -> bool:
        # A forked child shares the descriptor with its parent: reading would steal the parent's events.
        if os.getpid() != self._pid:
            return True
        try:
            return bool(os.read(self._fd, 1 << 16))  # any event, or IN_Q_OVERFLOW
        except BlockingIOError:
            return False
        except OSError:
            return True

    def close(self) -> None:
        if os.getpid() == self._pid and self._fd >= 0:
            os.close(self._fd)
        self._fd = -1


def _new_watch() -> _Watch | None:
    try:
        return _Watch()
    except (OSError, AttributeError):  # no inotify (not Linux), or no instance left
        return None


def _scan(roots: tuple[str, ...]) -> _Walk:
    dirs: set[str] = set()
    files: set[str] = set()
    listed: list[tuple[str, int]] = []
    since = time.time_ns() - _RECENT_NS
    recent = False
    watch = _new_watch()
    for root in roots:
        stack = [root]
        while stack:
            dirpath = stack.pop()
            # Watched before it is listed: an entry added after the listing is an event.
            if watch is not None and not watch.add(dirpath) and os.path.isdir(dirpath):
                watch.close()  # the watch limit is reached: fall back to comparing mtimes
                watch = None
            try:
                mtime = os.stat(dirpath, follow_symlinks=False).st_mtime_ns
                with os.scandir(dirpath) as entries:
                    names = [(e.name, e.is_dir(), e.is_symlink()) for e in entries]
            except OSError:
                continue  # unreadable or gone: os.walk skipped these too
            listed.append((dirpath, mtime))
            recent = recent or mtime >= since
            # As os.walk: a symlink to a directory is named with the directories (a link called `envs`
            # counts) but never descended into.
            dirnames = [n for n, is_dir, _ in names if is_dir]
            filenames = [n for n, is_dir, _ in names if not is_dir]
            descend = [n for n, is_dir, link in names if is_dir and not link]
            if "envs" in dirnames and _holds_secrets(os.path.join(dirpath, "envs")):
                if any(m in dirnames or m in filenames for m in _TREE_MARKERS) and dirpath not in roots:
                    dirs.add(dirpath)
                    continue  # the whole tree is covered
                dirs.add(os.path.join(dirpath, "envs"))
                descend = [n for n in descend if n != "envs"]
            for name in filenames:
                if name.startswith("turngym-") and name.endswith(_ARCHIVE_SUFFIXES):
                    files.add(os.path.join(dirpath, name))
            stack.extend(os.path.join(dirpath, n) for n in descend)
    # A directory inside another one already covered needs no mount of its own.
    kept = sorted(d for d in dirs if not any(d.startswith(o + os.sep) for o in dirs))
    return _Walk(HiddenPaths(tuple(kept), tuple(sorted(files)), roots), tuple(listed), recent, watch)


def _holds_secrets(envs_dir: str) -> bool:
    try:
        return any(os.path.isdir(os.path.join(envs_dir, sub)) for sub in _SECRET_SUBPACKAGES)
    except OSError:
        return True  # unreadable to us: cover it rather than guess


def clear_cache() -> None:
    """Forget the walks (no longer needed after an install: a change under the roots is noticed)."""
    with _lock:
        for walk in _cache.values():
            if walk.watch is not None:
                walk.watch.close()
        _cache.clear()
