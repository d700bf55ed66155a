"""SplitMix64: a small seeded generator in plain Python, for envs that draw a few numbers per episode.

numpy's `Generator` costs microseconds to build and microseconds per `integers` call, more than a whole
guess-number episode; SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number
generators", 2014; the seeder of the xoshiro family) is a handful of integer operations per draw, and
consecutive seeds give unrelated streams. `TextEnv.quick_random` is one, seeded from `reset(seed=...)`.
"""

from __future__ import annotations

_MASK64 = 0xFFFFFFFFFFFFFFFF
_GOLDEN_GAMMA = 0x9E3779B97F4A7C15


class SplitMix64:
    """A 64-bit generator: `next_u64()`, and `integers(low, high)` like numpy's (`high` excluded)."""

    __slots__ = ("state",)

    def __init__(self, seed: int):
        if type(seed) is not int or seed < 0:
            raise ValueError(f"SplitMix64 needs a whole number >= 0 as seed, got {seed!r}")
        # Seeds wider than 64 bits are folded in, so every bit of them counts.
        state = seed & _MASK64
        seed >>= 64
        while seed:
            state = _mix(state ^ (seed & _MASK64))
            seed >>= 64
        self.state = state

    def next_u64(self) -> int:
        """The next 64-bit output."""
        self.state = z = (self.state + _GOLDEN_GAMMA) & _MASK64
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
        return z ^ (z >> 31)

    def integers(self, low: int, high: int) -> int:
        """A uniform whole number in `low..high-1`, as `numpy.random.Generator.integers(low, high)` draws."""
        span = high - low
        if not 0 < span <= 1 << 64:
            raise ValueError(f"integers needs low < high within 2**64 of each other, got {low}, {high}")
        # `next_u64`, inlined: most draws are one output.
        self.state = z = (self.state + _GOLDEN_GAMMA) & _MASK64
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
        # Lemire's multiply-shift, with the rejection step that makes every value equally likely.
        product = (z ^ (z >> 31)) * span
        if (product & _MASK64) < span:
            threshold = (1 << 64) % span
            while (product & _MASK64) < threshold:
                product = self.next_u64() * span
        return low + (product >> 64)


def _mix(z: int) -> int:
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return z ^ (z >> 31)
