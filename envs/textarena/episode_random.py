"""EpisodeRandom: the `random` module (and optionally `numpy.random`) one TextArena episode plays with.

TextArena's games draw from the `random` module's functions (`State.__init__` calls `random.seed(seed)`,
games call `random.randint`, `random.shuffle`, ...). Each episode owns a `random.Random`: while TextArena
code runs, the module's functions are that instance's methods, and afterwards the module's own again. The
global generator is never touched, so an episode is the same for the same seed however many other episodes
(or other code) use `random` in between. Swapping the functions costs about a microsecond per step; swapping
the state with `getstate`/`setstate` cost 100 µs. No TextArena game binds them at import
(`from random import ...`), which this relies on. Games that draw from the global `numpy.random` (the
table marks them) get that state swapped too.
"""

from __future__ import annotations

import random
import threading
from typing import Any

# The module-level functions of `random`: bound methods of its hidden global instance.
_FUNCTIONS = tuple(
    name
    for name in dir(random)
    # `random.random` and `getrandbits` are builtin methods of the C base class, the others Python methods.
    if not name.startswith("_") and getattr(getattr(random, name), "__self__", None) is random._inst
)
# The swap touches process-wide names: one episode's TextArena code runs at a time.
_SWAP_LOCK = threading.RLock()


class EpisodeRandom:
    """A context manager that runs code with this episode's generator behind `random`'s functions."""

    __slots__ = ("_bound", "_np", "_outer")

    def __init__(self, seed: int, *, numpy_global: bool = False):
        rng = random.Random(seed)
        self._bound = tuple((name, getattr(rng, name)) for name in _FUNCTIONS)
        self._np: Any = None
        if numpy_global:
            import numpy as np

            self._np = np.random.RandomState(seed).get_state()
        self._outer: list[tuple[tuple[tuple[str, Any], ...], Any]] = []

    def __enter__(self) -> EpisodeRandom:
        _SWAP_LOCK.acquire()
        module = random
        outer = tuple((name, getattr(module, name)) for name, _ in self._bound)
        outer_np = None
        if self._np is not None:
            import numpy as np

            outer_np = np.random.get_state()
            np.random.set_state(self._np)
        self._outer.append((outer, outer_np))
        for name, method in self._bound:
            setattr(module, name, method)
        return self

    def __exit__(self, *exc: object) -> None:
        outer, outer_np = self._outer.pop()
        for name, function in outer:
            setattr(random, name, function)
        if self._np is not None:
            import numpy as np

            self._np = np.random.get_state()
            np.random.set_state(outer_np)
        _SWAP_LOCK.release()
