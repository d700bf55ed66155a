"""Seeding that waits for the first draw: `reset(seed=...)` records the seed, the generators come on first use.

Most episodes of most envs never draw from `np_random`, and building a numpy generator costs more than a
short episode; a fresh env per episode (verl's agent loop) would pay it every time. Measured with
bench/env_throughput.py: building it at each seeded reset takes the `make()` per episode row from 227k to
168k steps/s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import gymnasium as gym

from envs.core.seeding import np_random
from envs.core.splitmix import SplitMix64

if TYPE_CHECKING:
    import numpy as np


class LazySeeding(gym.Env):
    """`np_random` and `quick_random` built from the last `reset` seed when first read, as Gymnasium's."""

    _generator: np.random.Generator | None = None
    _pending_seed: int | None = None
    _quick_random: SplitMix64 | None = None

    @property
    def _np_random(self) -> np.random.Generator | None:
        # gym.Env's own attribute, read by its `np_random` and its env checker: a recorded seed becomes
        # the generator Gymnasium would have built at reset.
        if self._generator is None and self._pending_seed is not None:
            self._generator = np_random(self._pending_seed)[0]
            self._pending_seed = None
        return self._generator

    @_np_random.setter
    def _np_random(self, value: np.random.Generator | None) -> None:
        self._generator, self._pending_seed = value, None

    def _record_seed(self, seed: Any) -> None:
        """What `reset(seed=seed)` does to the generators (`seed` not None)."""
        if type(seed) is int and seed >= 0:
            self._generator, self._pending_seed, self._np_random_seed = None, seed, seed
        else:
            # Anything else takes Gymnasium's own path, its errors included (see envs.core.seeding).
            self._np_random, self._np_random_seed = np_random(seed)
        self._quick_random = None

    @property
    def quick_random(self) -> SplitMix64:
        """A cheap generator (`envs.core.splitmix.SplitMix64`) for envs that draw a few numbers per episode.

        Seeded from `reset(seed=...)` like `np_random`, with its own stream; an env never seeded takes
        the seed of `np_random` (fresh entropy, as Gymnasium's). Unseeded resets continue the stream.
        """
        if self._quick_random is None:
            seed = self.np_random_seed
            if seed < 0:  # np_random was set by hand: the seed comes from it
                seed = int(self.np_random.integers(0, 2**63))
            self._quick_random = SplitMix64(seed)
        return self._quick_random
