"""The line a server prints once it accepts connections: where it listens, and that Ctrl-C stops it.

uvicorn logs nothing at the default log level, so a server is only known to be up when a connection to
it succeeds: a daemon thread tries until then, or until the returned event is set (the server ended
first, e.g. it refused its settings or failed to load its model).
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import time

# The address a wildcard bind is reached at from this machine.
_LOCAL = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}


def say_when_listening(prog: str, host: str, port: int, what: str, wait_s: float = 300.0) -> threading.Event:
    """Print ``<prog>: listening on http://HOST:PORT (<what>, pid N); Ctrl-C stops it`` once the port accepts.

    Args:
        prog: the command's name, the line's prefix (``envs serve``).
        host: the address the server binds.
        port: its port (0: chosen by the system, not known here, so nothing is printed).
        what: what it serves, e.g. ``one process`` or ``model <name>``.
        wait_s: how long to keep trying.

    Returns:
        An event: set it when the server ended, so a server that never listened prints nothing.
    """
    ended = threading.Event()
    if port == 0:
        return ended
    target = _LOCAL.get(host, host)
    shown = f"[{host}]" if ":" in host else host

    def wait() -> None:
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline and not ended.is_set():
            try:
                socket.create_connection((target, port), timeout=1).close()
            except OSError:
                ended.wait(0.1)
                continue
            if ended.is_set():
                return
            print(
                f"{prog}: listening on http://{shown}:{port} ({what}, pid {os.getpid()}); Ctrl-C stops it",
                file=sys.stderr,
                flush=True,
            )
            return

    threading.Thread(target=wait, name=f"{prog}-listening", daemon=True).start()
    return ended
