"""Which dtype a CPU computes fastest in: fp32, or bf16 where the CPU has bf16 units.

Machines of the same kind differ. One with AVX-512 bf16 (or AMX) units runs a bf16 matmul about 4x
faster than fp32; one with AVX2 only emulates bf16, about 50x slower than fp32. A dtype fixed in a
preset is therefore right on one CPU and ruinous on the other, so the trainer and the warm start ask
this module: a short matmul in each dtype, timed on this machine at start, decides.

    >>> from turngym.engines.compute_dtype import choose_compute_dtype
    >>> choice = choose_compute_dtype("fp32")   # a forced choice measures nothing
    >>> choice.dtype, choice.rates is None
    ('fp32', True)
"""

from __future__ import annotations

import functools
import platform
import time
from dataclasses import dataclass
from pathlib import Path

CHOICES = ("auto", "fp32", "bf16")
# bf16 mixed precision casts weights and gradients every step: below this speed-up over fp32 on the
# probe it does not pay (round 4 measured 1.5-1.75x per actor step at a 4x matmul speed-up).
BF16_MIN_SPEEDUP = 2.0
# A train-like shape for a 135M model: (tokens x hidden) @ (hidden x ffn), small enough that the
# emulated bf16 path takes ~0.1 s.
PROBE_SHAPE = (256, 576, 1536)


@dataclass(frozen=True)
class MatmulRates:
    """GFLOP/s of one matmul shape in fp32 and bf16 on this CPU, with the threads torch used."""

    fp32: float
    bf16: float
    threads: int
    cpu: str

    def line(self) -> str:
        """``fp32 35 GFLOP/s, bf16 0.7 GFLOP/s (AMD EPYC, 2 threads)``."""
        return (
            f"fp32 {self.fp32:.3g} GFLOP/s, bf16 {self.bf16:.3g} GFLOP/s ({self.cpu}, {self.threads} threads)"
        )


@dataclass(frozen=True)
class DtypeChoice:
    """The compute dtype chosen, what was asked, and the rates it was chosen from (None when forced)."""

    dtype: str
    requested: str
    rates: MatmulRates | None

    def line(self) -> str:
        """One line for a run's start: the choice, why, and how to override it."""
        if self.rates is None:
            return f"compute dtype {self.dtype} (turngym.compute_dtype={self.requested})"
        return (
            f"compute dtype {self.dtype}, measured on this CPU: {self.rates.line()} "
            f"(turngym.compute_dtype=fp32|bf16 overrides)"
        )


def cpu_name() -> str:
    """The CPU's model name from /proc/cpuinfo (``platform.processor()`` elsewhere), for figures."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def _rate(dtype, shape: tuple[int, int, int], budget_s: float, rounds: int = 5) -> float:
    import torch

    m, k, n = shape
    a = torch.randn(m, k).to(dtype)
    b = torch.randn(k, n).to(dtype)
    torch.matmul(a, b)  # first call: allocation and kernel choice, not timed
    # The best of a few short rounds: on a loaded machine other processes take the CPU for part of the
    # budget, and the mean would then mix their share into the rate the dtype is chosen from.
    best = 0.0
    for _ in range(rounds):
        reps, started = 0, time.perf_counter()
        while True:
            torch.matmul(a, b)
            reps += 1
            elapsed = time.perf_counter() - started
            if elapsed >= budget_s / rounds:
                break
        best = max(best, 2.0 * m * k * n * reps / elapsed / 1e9)
    return best


@functools.cache
def measure_matmul_rates(shape: tuple[int, int, int] = PROBE_SHAPE, budget_s: float = 0.05) -> MatmulRates:
    """Time a matmul of `shape` in fp32 and in bf16 on this CPU (cached for the process).

    Args:
        shape: (m, k, n) of the product ``(m x k) @ (k x n)``.
        budget_s: Seconds each dtype is timed for, after one untimed call (at least one timed call).

    Returns:
        The two rates in GFLOP/s, the torch thread count and the CPU's name.

    Example:
        >>> rates = measure_matmul_rates((64, 64, 64), budget_s=0.01)
        >>> rates.fp32 > 0 and rates.bf16 > 0
        True
    """
    import torch

    return MatmulRates(
        fp32=_rate(torch.float32, shape, budget_s),
        bf16=_rate(torch.bfloat16, shape, budget_s),
        threads=torch.get_num_threads(),
        cpu=cpu_name(),
    )


def choose_compute_dtype(requested: str = "auto") -> DtypeChoice:
    """The dtype to compute in on this CPU: `requested` itself, or for ``auto`` what the probe favours.

    ``auto`` picks bf16 only where a bf16 matmul runs at least ``BF16_MIN_SPEEDUP`` times as fast as
    fp32 (a CPU with bf16 units); everywhere else fp32, the path every CPU has.

    Args:
        requested: ``auto``, ``fp32`` or ``bf16``.

    Returns:
        The choice, with the measured rates when it was ``auto``.

    Raises:
        ValueError: `requested` is not one of ``auto``, ``fp32``, ``bf16``.

    Example:
        >>> choose_compute_dtype("bf16").dtype
        'bf16'
    """
    if requested not in CHOICES:
        raise ValueError(f"turngym.compute_dtype={requested!r}: give one of {', '.join(CHOICES)}")
    if requested != "auto":
        return DtypeChoice(requested, requested, None)
    rates = measure_matmul_rates()
    return DtypeChoice(dtype_for(rates), requested, rates)


def dtype_for(rates: MatmulRates) -> str:
    """``bf16`` where it runs at least ``BF16_MIN_SPEEDUP`` times as fast as fp32, else ``fp32``.

    Example:
        >>> dtype_for(MatmulRates(fp32=35.0, bf16=0.7, threads=2, cpu="an AVX2-only CPU"))
        'fp32'
        >>> dtype_for(MatmulRates(fp32=197.0, bf16=806.0, threads=2, cpu="a CPU with bf16 units"))
        'bf16'
    """
    return "bf16" if rates.bf16 >= BF16_MIN_SPEEDUP * rates.fp32 else "fp32"
