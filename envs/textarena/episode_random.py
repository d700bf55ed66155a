"""EpisodeRandom: the global `random` and `numpy.random` state one TextArena episode plays with.

TextArena's games draw from the global `random` module (`State.__init__` calls `random.seed(seed)`), and a
few (Sokoban, IteratedStagHunt) from the global `numpy.random`. Each episode owns its own copy of both
states: it is swapped in while TextArena code runs and swapped out afterwards, so an episode is the same
for the same seed however many other episodes (or other code) use `random` in between, and the caller's
global state is left as it was.
"""

from __future__ import annotations

import random
import threading
from typing import Any

import numpy as np

# The swap touches process-wide state: one episode's TextArena code runs at a time.
_SWAP_LOCK = threading.RLock()


class EpisodeRandom:
    """A context manager that runs code with this episode's `random`/`numpy.random` state as the global one."""

    __slots__ = ("_np", "_outer", "_py")

    def __init__(self, seed: int):
        self._py = random.Random(seed).getstate()
        self._np: Any = np.random.RandomState(seed).get_state()
        self._outer: list[tuple[Any, Any]] = []

    def __enter__(self) -> EpisodeRandom:
        _SWAP_LOCK.acquire()
        self._outer.append((random.getstate(), np.random.get_state()))
        random.setstate(self._py)
        np.random.set_state(self._np)
        return self

    def __exit__(self, *exc: object) -> None:
        self._py = random.getstate()
        self._np = np.random.get_state()
        outer_py, outer_np = self._outer.pop()
        random.setstate(outer_py)
        np.random.set_state(outer_np)
        _SWAP_LOCK.release()
