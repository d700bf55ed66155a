"""`np_random(seed)`: Gymnasium's seeded generator, minus numpy's slow final seeding step.

`gymnasium.utils.seeding.np_random(seed)` is `Generator(PCG64(SeedSequence(seed)))`, and most of its
cost is `SeedSequence.generate_state`, a Python-level loop over numpy scalars. A fresh env per episode
(verl's agent loop) pays it every episode. Here the entropy pool still comes from numpy's own
`SeedSequence`; only the last eight hash steps run on Python ints, and the words are cached per seed
(GRPO groups reset many envs with one seed). The generator, and so every episode, is the one
Gymnasium would build: tests compare the streams for many seeds.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np
from numpy.random.bit_generator import ISpawnableSeedSequence

_MASK32 = 0xFFFFFFFF
# (xor, multiplier) of each step of SeedSequence.generate_state: hash_const starts at 0x8B51F9DD and
# is multiplied by 0x58F38DED per word, independently of the data, so the eight pairs are constants.
_GENERATE_STEPS = (
    (0x8B51F9DD, 0x464A0A99),
    (0x464A0A99, 0x819D14A5),
    (0x819D14A5, 0xD369FDC1),
    (0xD369FDC1, 0x501638AD),
    (0x501638AD, 0xA600C129),
    (0xA600C129, 0x8B0167F5),
    (0x8B0167F5, 0x5C1E2ED1),
    (0x5C1E2ED1, 0x301D747D),
)


def np_random(seed: int | None = None) -> tuple[np.random.Generator, Any]:
    """(generator, seed) as `gymnasium.utils.seeding.np_random(seed)` returns them, same stream."""
    if type(seed) is not int or seed < 0:
        # None (fresh entropy) and invalid seeds: Gymnasium's own path, its errors included.
        from gymnasium.utils import seeding

        return seeding.np_random(seed)
    return np.random.Generator(np.random.PCG64(_SeedWords(seed))), seed


@lru_cache(maxsize=4096)
def pcg64_words(seed: int) -> tuple[int, int, int, int]:
    """`SeedSequence(seed).generate_state(4, np.uint64)` as Python ints."""
    pool = np.random.SeedSequence(seed).pool.tolist()
    w = []
    for i, (xor, mult) in enumerate(_GENERATE_STEPS):
        value = ((pool[i & 3] ^ xor) * mult) & _MASK32
        w.append(value ^ (value >> 16))
    # Little-endian pairs of 32-bit words, as numpy views them.
    return (w[0] | w[1] << 32, w[2] | w[3] << 32, w[4] | w[5] << 32, w[6] | w[7] << 32)


class _SeedWords(ISpawnableSeedSequence):
    """The seed sequence PCG64 is built from: the cached words; anything else from `SeedSequence(seed)`."""

    __slots__ = ("entropy",)

    def __init__(self, seed: int):
        self.entropy = seed

    def generate_state(self, n_words: int, dtype: Any = np.uint32) -> np.ndarray:
        """PCG64's four uint64 words from the cache; other requests from a real SeedSequence."""
        if n_words == 4 and dtype is np.uint64:
            return np.array(pcg64_words(self.entropy), dtype=np.uint64)
        return np.random.SeedSequence(self.entropy).generate_state(n_words, dtype)

    def spawn(self, n_children: int) -> list[np.random.SeedSequence]:
        """Children exactly as `SeedSequence(seed).spawn` makes them."""
        return np.random.SeedSequence(self.entropy).spawn(n_children)
