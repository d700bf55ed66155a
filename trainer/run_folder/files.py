"""Files in a run folder are turngym's own: opened without following symbolic links, never a FIFO.

A run folder may come from someone else (a shared disk, a copied or downloaded run). Planted there,
``run.lock``, ``metrics.jsonl`` or ``health_halt.json`` as a symbolic link to a file of the user's made a
run truncate and overwrite that file; ``run.lock`` as a FIFO hung the lock check (an ``open`` that waits
for a writer). Every read and write of such a file goes through here: ``O_NOFOLLOW`` refuses a link,
``O_NONBLOCK`` keeps a FIFO from blocking the open, and anything but a regular file is refused in one line
(``RunFileError``, a ``UsageError``: ``trainer.run`` prints it and exits 2). A whole file is rewritten
through a new file made with ``O_EXCL`` and renamed over the old one, which replaces a link rather than
writing through it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from turngym.common.cli_errors import UsageError

_OPEN_FLAGS = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class RunFileError(UsageError):
    """A run folder holds something other than a regular file where turngym keeps one of its own."""


def _refusal(path: Path, what: str) -> RunFileError:
    return RunFileError(
        f"{path} is {what}, not a file this run wrote; a run folder's files are turngym's own: remove it, "
        "or train into another folder (turngym.output_dir=DIR)"
    )


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a device or other special file"


def open_run_file(path: str | Path, flags: int, mode: int = 0o644) -> int:
    """``os.open`` for a run-folder file: refuses a symbolic link, a FIFO or anything but a regular file.

    Args:
        path: the file.
        flags: ``os.O_*`` flags (``O_CREAT`` makes a missing file).
        mode: permissions of a file it makes.

    Returns:
        The descriptor (the caller closes it).

    Raises:
        RunFileError: one line saying what is there instead.
        FileNotFoundError: the file is missing (and ``flags`` has no ``O_CREAT``).

    Example:
        >>> import os, tempfile
        >>> from pathlib import Path
        >>> with tempfile.TemporaryDirectory() as name:
        ...     os.symlink(Path(name) / "elsewhere", Path(name) / "run.lock")
        ...     open_run_file(Path(name) / "run.lock", os.O_RDWR | os.O_CREAT)
        Traceback (most recent call last):
        ...
        trainer.run_folder.files.RunFileError: ... is a symbolic link, not a file this run wrote; ...
    """
    path = Path(path)
    try:
        fd = os.open(path, flags | _OPEN_FLAGS, mode)
    except OSError as exc:
        # ELOOP: the last component is a link; ENXIO: a FIFO without a reader (write-only) or a socket;
        # EISDIR: a folder opened for writing.
        if exc.errno in (errno.ELOOP, errno.ENXIO, errno.EISDIR, errno.EOPNOTSUPP):
            try:
                raise _refusal(path, _kind(os.lstat(path).st_mode)) from None
            except OSError:
                raise _refusal(path, "not a regular file") from None
        raise
    kind = os.fstat(fd).st_mode
    if not stat.S_ISREG(kind):
        os.close(fd)
        raise _refusal(path, _kind(kind))
    return fd


def read_run_file(path: str | Path) -> str | None:
    """The text of a run-folder file, None when it is missing; ``RunFileError`` when it is not a file."""
    try:
        fd = open_run_file(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as f:
        return f.read().decode("utf-8", errors="replace")


def append_run_file(path: str | Path, text: str) -> None:
    """Append ``text`` to a run-folder file, making it if missing (never through a link)."""
    fd = open_run_file(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    with os.fdopen(fd, "ab") as f:
        f.write(text.encode())


@contextlib.contextmanager
def replacing_run_file(path: str | Path) -> Iterator[TextIO]:
    """A text file to write that replaces ``path`` once the block ends without an error.

    It is a new file (``O_EXCL``, a name of its own) renamed over ``path``: a rename replaces the name,
    never writes through a link, and a reader never sees half a file. On an error it is removed.

    Args:
        path: the file; what is there must be a regular file (or nothing).

    Yields:
        The file, open for writing (UTF-8).

    Raises:
        RunFileError: a link, FIFO, folder or other special file is there.
    """
    path = Path(path)
    with contextlib.suppress(FileNotFoundError):
        mode = os.lstat(path).st_mode
        if not stat.S_ISREG(mode):
            raise _refusal(path, _kind(mode))
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _OPEN_FLAGS, 0o644)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            yield f
        os.replace(temporary, path)  # a rename replaces whatever name is there, and follows no link
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def write_run_file(path: str | Path, text: str) -> None:
    """Replace a run-folder file with ``text`` (``replacing_run_file``); ``RunFileError`` if it is no file."""
    with replacing_run_file(path) as f:
        f.write(text)


def remove_run_file(path: str | Path) -> None:
    """Remove a run-folder file if it is there (a link is removed itself; a folder is refused)."""
    path = Path(path)
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISDIR(mode):
        raise _refusal(path, "a folder")
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


def save_json_state(folder: str | Path, name: str, state: dict) -> Path:
    """Write a schedule's ``state`` as ``<folder>/<name>`` (JSON, atomically: a kill leaves old or new).

    The curriculum, the pass-rate curriculum and the adaptive mixture keep their state in checkpoint
    folders this way, so a resume continues them.

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     _ = save_json_state(folder, "state.json", {"level": 2})
        ...     load_json_state(folder, "state.json")
        {'level': 2}
    """
    import json

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    write_run_file(path, json.dumps(state, indent=1, sort_keys=True))
    return path


def load_json_state(folder: str | Path, name: str) -> dict | None:
    """The state ``save_json_state`` wrote in ``<folder>/<name>``; None when there is none."""
    import json

    text = read_run_file(Path(folder) / name)
    return None if text is None else json.loads(text)
