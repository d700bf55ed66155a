"""The agent's repository, held as text in the env's process: the only copy that persists between calls.

Paths are checked as text (relative, no `..`, no odd characters), so no edit can reach outside the
repository and the repository holds no symlinks at all: each sandbox run gets a fresh copy of these
files, and what a shell command changes comes back as file contents (never as links). Sizes are capped.
"""

from __future__ import annotations

import re

MAX_FILES = 64
MAX_FILE_CHARS = 64_000
MAX_TOTAL_CHARS = 512_000
MAX_PATH_CHARS = 160
MAX_DEPTH = 6
_PART = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")


class RepoError(ValueError):
    """An edit the repository refuses, with a message for the agent."""


def check_path(path: object) -> str:
    """`path` as a normalised repository-relative path; raises RepoError saying what is wrong."""
    if not isinstance(path, str):
        raise RepoError(f"path must be a string, got {type(path).__name__}")
    text = path.strip()
    if text.startswith("./"):
        text = text[2:]
    if not text:
        raise RepoError("path is empty")
    if len(text) > MAX_PATH_CHARS:
        raise RepoError(f"path is longer than {MAX_PATH_CHARS} characters")
    if text.startswith("/") or "\\" in text or "\x00" in text:
        raise RepoError(f"path {text[:80]!r} must be relative to the repository root (like pkg/module.py)")
    parts = text.split("/")
    if any(p in ("", ".", "..") for p in parts):
        raise RepoError(f"path {text[:80]!r} may not contain '..', '.' or empty parts")
    if len(parts) > MAX_DEPTH:
        raise RepoError(f"path {text[:80]!r} is nested deeper than {MAX_DEPTH} levels")
    bad = next((p for p in parts if not _PART.match(p)), None)
    if bad is not None:
        raise RepoError(f"path part {bad[:40]!r} may use only letters, digits, '_', '-' and '.' (not first)")
    return "/".join(parts)


class RepoFiles:
    """Path -> text of every file in the repository, with edits that keep the caps."""

    def __init__(self, files: dict[str, str]):
        self.files: dict[str, str] = {check_path(p): t for p, t in files.items()}

    def paths(self) -> list[str]:
        """Every file, sorted."""
        return sorted(self.files)

    def directories(self) -> set[str]:
        """Every directory that holds a file ('' is the root)."""
        out = {""}
        for path in self.files:
            parts = path.split("/")[:-1]
            out.update("/".join(parts[: i + 1]) for i in range(len(parts)))
        return out

    def read(self, path: object) -> str:
        """The text of a file; RepoError when there is none."""
        key = check_path(path)
        if key not in self.files:
            raise RepoError(f"no file {key!r} in the repository{self._near(key)}")
        return self.files[key]

    def write(self, path: object, text: str) -> str:
        """Create or replace a file; returns its normalised path."""
        key = check_path(path)
        if key in self.directories():
            raise RepoError(f"{key!r} is a directory")
        parent = key.rsplit("/", 1)[0] if "/" in key else ""
        if any(p == parent or parent.startswith(p + "/") for p in self.files):
            raise RepoError(f"{parent!r} is a file, so it cannot hold {key!r}")
        self._check_size(key, text)
        self.files[key] = text
        return key

    def replace(self, path: object, old: str, new: str) -> str:
        """Replace the one occurrence of `old` in a file; returns its normalised path."""
        key = check_path(path)
        text = self.read(key)
        if not old:
            raise RepoError(
                "`old` is empty; give the exact text to replace (or omit it to write the whole file)"
            )
        count = text.count(old)
        if count == 0:
            raise RepoError(f"`old` does not occur in {key}; read the file and copy the text exactly")
        if count > 1:
            raise RepoError(f"`old` occurs {count} times in {key}; include more context so it occurs once")
        updated = text.replace(old, new, 1)
        self._check_size(key, updated)
        self.files[key] = updated
        return key

    def _check_size(self, key: str, text: str) -> None:
        if len(text) > MAX_FILE_CHARS:
            raise RepoError(f"{key} would be {len(text)} characters; files are limited to {MAX_FILE_CHARS}")
        if key not in self.files and len(self.files) >= MAX_FILES:
            raise RepoError(f"the repository already has {MAX_FILES} files, the most it may hold")
        total = sum(len(t) for p, t in self.files.items() if p != key) + len(text)
        if total > MAX_TOTAL_CHARS:
            raise RepoError(f"the repository would hold {total} characters; the limit is {MAX_TOTAL_CHARS}")

    def _near(self, key: str) -> str:
        name = key.rsplit("/", 1)[-1]
        near = [p for p in self.files if p.rsplit("/", 1)[-1] == name]
        return f" (did you mean {', '.join(near[:3])}?)" if near else ""

    def listing(self, under: str = "") -> str:
        """The files under a directory (all when '') with their sizes in lines."""
        prefix = under + "/" if under else ""
        rows = [
            f"{p} ({len(self.files[p].splitlines())} lines)" for p in self.paths() if p.startswith(prefix)
        ]
        return "\n".join(rows) if rows else "(no files)"
