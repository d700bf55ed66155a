"""What a sandbox must not see inside the directories it mounts (`tools.sandbox.code_view`).

The first rule is the view: a sandbox binds the system's code directories only, so grading data in a
data tree (/usr/share, /usr/local, /opt, dist-packages, ...) is not there in any form. This module is
the second rule, over what is in view: `hidden_paths` walks the mounted directories and returns every
place below that must be covered; bwrap_argv covers each directory with an empty read-only tmpfs and
each file with /dev/null. What is found:

- an `envs` package directory with a `code` or `repo_fix` subpackage (an installed copy, build/lib, a
  bytecode cache tree): that `envs` directory; when its parent is a source tree (pyproject.toml,
  setup.py or .git beside it) the whole tree, so tests, .git objects and build output go too;
- every `site-packages` and `dist-packages` directory: third-party packages (a vendored turngym among
  them), which the sandbox's `python -I -S` never imports;
- every archive, by its content, not its name: a file that starts as gzip, bzip2, xz, zstd, lzma, lz4,
  7z, zip or tar does, and a script with a zip appended (a zipapp `.pyz`, a conda or wheel file under
  any name). No code the sandbox runs reads one, and what an archive holds is not looked into;
- every exact copy of a hidden file (`envs/code/data/*`, the repo-fix templates and catalogue), found by
  size and SHA-256 under any name (a `problems.jsonl` copied into share/, a vendored copy renamed);
- a turngym wheel, sdist or egg file (`turngym-*.whl`, `.tar.gz`, `.zip`, `.egg`): that file.

A walk is reused only while nothing under the roots changed: the walk puts an inotify watch on each
directory before listing it (entries created, removed, renamed or written), so checking is one
non-blocking read; where inotify is missing or its watch limit is reached, each listed directory's
mtime is compared instead, and a walk that saw a directory or file changed in the last 2 s is not
reused. The dist-info (names and hashes only) and the console script stay visible; neither holds a
secret.
"""

from __future__ import annotations

import hashlib
import os
import stat
import threading
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path

_SECRET_SUBPACKAGES = ("code", "repo_fix")
_TREE_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")
_ARCHIVE_SUFFIXES = (".whl", ".tar.gz", ".tgz", ".zip", ".egg")
_PACKAGE_DIRS = ("site-packages", "dist-packages")
# How archives begin: gzip, bzip2, xz, zstd, lzma (alone), lz4, 7z, zip (a member or an empty one).
_ARCHIVE_HEADS = (
    b"\x1f\x8b",
    b"BZh",
    b"\xfd7zXZ\x00",
    b"\x28\xb5\x2f\xfd",
    b"\x5d\x00\x00",
    b"\x04\x22\x4d\x18",
    b"7z\xbc\xaf\x27\x1c",
    b"PK\x03\x04",
    b"PK\x05\x06",
)
_ZIP_END = b"PK\x05\x06"
_ZIP_END_REACH = 22 + 65535  # the end record and the longest comment it may carry
_PYINSTALLER_COOKIE = b"MEI\x0c\x0b\x0a\x0b\x0e"  # starts the last 88 bytes of a PyInstaller program
# Where the hidden files are in this install (`tools` and `envs` sit side by side).
_SECRET_SOURCES = ("envs/code/data", "envs/repo_fix/templates", "envs/repo_fix/catalogue.py")


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

    # IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF, and
    # IN_MODIFY | IN_CLOSE_WRITE (what a file holds decides whether it is covered), IN_ONLYDIR |
    # IN_DONT_FOLLOW
    _MASK = 0x100 | 0x200 | 0x40 | 0x80 | 0x400 | 0x800 | 0x02 | 0x08 | 0x01000000 | 0x02000000

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
            for name in descend:
                if name in _PACKAGE_DIRS:
                    dirs.add(os.path.join(dirpath, name))
            descend = [n for n in descend if n not in _PACKAGE_DIRS]
            for name in filenames:
                path = os.path.join(dirpath, name)
                if name.startswith("turngym-") and name.endswith(_ARCHIVE_SUFFIXES):
                    files.add(path)
                    continue
                covered, changed = _covered_by_content(path, since)
                recent = recent or changed
                if covered:
                    files.add(path)
            stack.extend(os.path.join(dirpath, n) for n in descend)
    # A directory inside another one already covered needs no mount of its own.
    kept = sorted(d for d in dirs if not any(d.startswith(o + os.sep) for o in dirs))
    return _Walk(HiddenPaths(tuple(kept), tuple(sorted(files)), roots), tuple(listed), recent, watch)


@cache
def _secret_digests() -> dict[int, frozenset[str]]:
    """Size -> SHA-256s of the hidden files of the turngym beside this module (empty when absent)."""
    base = Path(__file__).resolve().parents[2]
    found: dict[int, set[str]] = {}
    for rel in _SECRET_SOURCES:
        top = base / rel
        paths = [top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file())
        for path in paths:
            if path.suffix == ".pyc" or path.name == "__init__.py":
                continue
            data = path.read_bytes()
            if len(data) >= 64:  # a tiny file's digest would match unrelated files
                found.setdefault(len(data), set()).add(hashlib.sha256(data).hexdigest())
    return {size: frozenset(d) for size, d in found.items()}


def _covered_by_content(path: str, since: int) -> tuple[bool, bool]:
    """(whether `path` is an archive or an exact copy of a hidden file, whether it changed lately)."""
    try:
        info = os.stat(path, follow_symlinks=False)
    except OSError:
        return False, False
    if not stat.S_ISREG(info.st_mode) or info.st_size == 0:
        return False, False  # a link is judged where it really is; a device or socket holds nothing
    changed = info.st_mtime_ns >= since
    try:
        with open(path, "rb") as fh:
            head = fh.read(512)
            if head.startswith(_ARCHIVE_HEADS) or head[257:262] == b"ustar":
                return True, changed
            # An archive appended to something else: a zipapp (a script, then a zip), a self-extracting
            # program (an ELF, then a zip or a PyInstaller archive), a zip behind any other bytes.
            reach = _ZIP_END_REACH if head.startswith(b"#!") else 4096
            fh.seek(max(0, info.st_size - reach))
            tail = fh.read()
            if head.startswith(b"\x7fELF"):
                # Exact places only: a shared library's last 4 KB may hold those bytes by chance.
                if tail[-22:].startswith(_ZIP_END) or tail[-88:].startswith(_PYINSTALLER_COOKIE):
                    return True, changed
                return False, changed
            if _ZIP_END in tail:
                return True, changed
            digests = _secret_digests().get(info.st_size)
            if digests:
                fh.seek(0)
                return hashlib.sha256(fh.read()).hexdigest() in digests, changed
    except OSError:
        return True, changed  # unreadable to us: cover it rather than guess
    return False, changed


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
