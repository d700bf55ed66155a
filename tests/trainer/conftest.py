"""Fixtures for the trainer tests."""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest


@pytest.fixture
def run_trainer() -> Callable[[list[str]], int]:
    """`trainer.run.main(argv)` in this process, with the environment variables it exports undone after."""
    from trainer.run import main

    saved = dict(os.environ)
    yield main
    os.environ.clear()
    os.environ.update(saved)
