"""Shared fixtures: a real `/run_code` server on a free loopback port."""

from __future__ import annotations

import pytest

from tools.sandbox.serve import spawn_server
from turngym.serving.loopback_server import stop_server


@pytest.fixture(scope="session")
def sandbox_server():
    """URL of `python -m tools.sandbox.serve` started for the test session."""
    url, proc = spawn_server("--max-concurrency", "4")
    yield url
    stop_server(proc)
