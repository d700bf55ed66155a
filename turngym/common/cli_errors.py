"""One way for every command line to report a user's mistake: one line on stderr, exit code 2.

Every CLI (``python -m envs``, ``rollout.eval``, ``rollout.view``, ``turngym.engines.serve``,
``turngym.engines.named_models``, ``tools.sandbox.serve``, ``trainer.run``) runs its work through ``run_cli``:

- a ``UsageError`` (a bad argument, key, name, path or setting) prints ``<prog>: <message>`` and
  exits 2, before anything is written or started;
- Ctrl-C prints one line (what to do next, e.g. that the same command resumes) and exits 130,
  without a traceback;
- ``--help`` prints to stdout and exits 0 (argparse's own behaviour, kept).

It lives on the ground floor (`turngym.common`) because every package with a command line uses it.
"""

from __future__ import annotations

import argparse
import difflib
import os
import socket
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, NoReturn

USAGE_EXIT = 2
INTERRUPT_EXIT = 130  # 128 + SIGINT, what a shell reports for a command stopped by Ctrl-C


class UsageError(Exception):
    """A mistake in how a command was called or configured; the message says what is wrong and what to do."""


def close_names(name: str, choices: Iterable[str], n: int = 3, cutoff: float = 0.6) -> list[str]:
    """Up to ``n`` of ``choices`` that look like ``name`` (a misspelling), closest first.

    Args:
        name: what the user wrote.
        choices: the valid names.
        n: at most this many suggestions.
        cutoff: how similar a suggestion must be (difflib's ratio, 0 to 1).

    Returns:
        The suggestions, possibly none.
    """
    return difflib.get_close_matches(name, sorted(set(choices)), n=n, cutoff=cutoff)


def did_you_mean(name: str, choices: Iterable[str], n: int = 3, cutoff: float = 0.6) -> str:
    """``"did you mean a or b?"`` for the names close to ``name``, or ``""`` when none is."""
    near = close_names(name, choices, n=n, cutoff=cutoff)
    return f"did you mean {' or '.join(near)}?" if near else ""


def one_line(text: str) -> str:
    """``text`` with its line breaks and runs of spaces folded into single spaces."""
    return " ".join(str(text).split())


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser whose mistakes are a ``UsageError`` (one line), not usage text and exit 2.

    Subcommand parsers made with ``add_subparsers`` are of this class too (argparse's default).
    """

    def error(self, message: str) -> NoReturn:
        """Raise the mistake as one line that points at ``--help``."""
        raise UsageError(f"{message} (see {self.prog} --help)")


def check_output_file(path: str | Path, flag: str) -> Path:
    """Check, before any work starts, that a file can be written at ``path`` later.

    Nothing is created: a missing parent folder is made when the file is written
    (``make_parent``), so a command that stops early leaves no empty folder behind.

    Args:
        path: the file the command will write.
        flag: how the command line names it (``--save``), for the message.

    Returns:
        The path, with ``~`` expanded.

    Raises:
        UsageError: the path is a folder, a parent is a file, or the nearest existing folder is not
            writable.
    """
    target = Path(path).expanduser()
    if target.is_dir():
        raise UsageError(f"{flag} {path}: is a folder; give a file path such as {target / 'out.jsonl'}")
    if target.exists() and not os.access(target, os.W_OK):
        raise UsageError(f"{flag} {path}: the file exists and is not writable; choose another path")
    parent = target.absolute().parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise UsageError(f"{flag} {path}: {parent} is a file, not a folder; choose another path")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"{flag} {path}: cannot write in {parent}; choose another path")
    return target


def make_parent(path: str | Path) -> Path:
    """Create the folders above ``path`` (checked earlier by ``check_output_file``); returns ``path``."""
    target = Path(path).expanduser()
    target.parent.mkdir(parents=True, exist_ok=True)
    return target


def check_port_free(host: str, port: int, flag: str = "--port") -> None:
    """Raise ``UsageError`` unless a server can listen on ``host:port`` (a free port, a local address).

    Checked before a model loads or a sandbox starts, so a port in use costs nothing. Binds with
    ``SO_REUSEADDR`` as uvicorn does, so a port left in TIME_WAIT by a stopped server counts as free.
    """
    if not 0 <= port <= 65535:
        raise UsageError(f"{flag} {port}: a port is a number from 0 to 65535")
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise UsageError(f"--host {host}: not an address of this machine ({exc.strerror})") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            if exc.errno in (98, 48):  # EADDRINUSE on Linux, macOS
                raise UsageError(
                    f"{flag} {port}: {host}:{port} is in use (another server?); pick a free port with {flag}"
                ) from None
            raise UsageError(f"--host {host} {flag} {port}: cannot listen there ({exc.strerror})") from None


def run_cli(
    prog: str,
    main: Callable[[list[str] | None], Any],
    argv: list[str] | None = None,
    interrupted: str | Callable[[], str] = "interrupted",
) -> int:
    """Run a command line's ``main(argv)`` and turn how it ended into an exit code.

    Args:
        prog: the command's name, the prefix of every message (``rollout.eval``).
        main: the command's work; returns an exit code (None counts as 0) and raises ``UsageError``
            for a user's mistake.
        argv: the arguments (None: ``sys.argv[1:]``, as argparse reads them).
        interrupted: the line printed after ``prog:`` on Ctrl-C, e.g. how to resume; or a function
            returning it when what was kept depends on how far the command got.

    Returns:
        The exit code: main's, 2 for a ``UsageError``, 130 for Ctrl-C, argparse's for ``--help`` (0).
    """
    try:
        code = main(argv)
    except UsageError as exc:
        print(f"{prog}: {one_line(str(exc))}", file=sys.stderr, flush=True)
        return USAGE_EXIT
    except KeyboardInterrupt:
        # The terminal already shows ^C; start a fresh line so the message is one whole line.
        said = interrupted() if callable(interrupted) else interrupted
        print(f"\n{prog}: {said}", file=sys.stderr, flush=True)
        return INTERRUPT_EXIT
    except SystemExit as exc:  # argparse's --help (0), or a library's exit
        if isinstance(exc.code, str):
            print(f"{prog}: {one_line(exc.code)}", file=sys.stderr, flush=True)
            return USAGE_EXIT
        return int(exc.code or 0)
    return code if isinstance(code, int) else 0
