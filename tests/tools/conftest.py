"""Shared fixtures: a real `/run_code` server on a free loopback port."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def sandbox_server():
    """URL of `python -m tools.sandbox.serve` started for the test session."""
    import httpx

    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tools.sandbox.serve", "--port", str(port), "--max-concurrency", "4"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                break
        except httpx.TransportError:
            time.sleep(0.05)
        if proc.poll() is not None:
            raise RuntimeError(f"server died: {proc.stderr.read().decode()}")
    yield url
    proc.terminate()
    proc.wait(timeout=10)
