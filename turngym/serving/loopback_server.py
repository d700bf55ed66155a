"""A server command started in a child process on a free loopback port, and stopped again."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time

# The repository root (turngym/serving/ is two levels down): where `python -m <package>` resolves.
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def free_port() -> int:
    """A TCP port free on loopback right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spawn_server(
    argv: list[str],
    *,
    port: int | None = None,
    ready_path: str = "/health",
    env: dict[str, str] | None = None,
    ready_s: float = 60.0,
) -> tuple[str, subprocess.Popen]:
    """Start `python <argv> --port N` from the repository root; (url, Popen) once GET `ready_path` is 200."""
    import httpx

    port = port or free_port()
    # A file, not a pipe: nobody reads a pipe while the server runs, so a chatty server would block
    # once it filled; the file is read only to explain a server that died (the child keeps its own fd).
    with tempfile.TemporaryFile() as errors:
        proc = subprocess.Popen(
            [sys.executable, *argv, "--port", str(port)],
            cwd=ROOT,
            env={**os.environ, **(env or {})},
            stdout=subprocess.DEVNULL,
            stderr=errors,
        )
        url = f"http://127.0.0.1:{port}"
        name = "python " + " ".join(argv)
        deadline = time.monotonic() + ready_s
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{url}{ready_path}", timeout=1).status_code == 200:
                    return url, proc
            except httpx.TransportError:
                time.sleep(0.05)
            if proc.poll() is not None:
                errors.seek(0)
                raise RuntimeError(f"{name} exited: {errors.read().decode(errors='replace')[-4000:]}")
    proc.kill()
    proc.wait()
    raise RuntimeError(f"{name} did not answer {ready_path} within {ready_s:g}s")


def stop_server(proc: subprocess.Popen) -> None:
    """Stop a server started by `spawn_server` (SIGTERM, then SIGKILL after 10 s)."""
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def trickled_request(
    url: str, path: str, headers: dict[str, str] | None = None, timeout_s: float = 10.0
) -> bytes:
    """POST to `path` a body that announces 1000 bytes, sends a few and stalls; the server's whole answer.

    What a slowloris client does: the server should answer (408) on its own before `timeout_s`, which
    otherwise raises `TimeoutError`. Returns the raw HTTP answer (status line, headers, JSON body).
    """
    host, port = url.rsplit("//", 1)[-1].rsplit(":", 1)
    lines = [f"POST {path} HTTP/1.1", "Host: x", "Content-Type: application/json", "Content-Length: 1000"]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    with socket.create_connection((host, int(port)), timeout=timeout_s) as sock:
        sock.sendall(("\r\n".join(lines) + '\r\n\r\n{"a": ').encode())
        reply = b""
        while b"}}" not in reply:  # every turngym error body ends its `error` object there
            chunk = sock.recv(65536)
            if not chunk:
                break
            reply += chunk
    return reply
