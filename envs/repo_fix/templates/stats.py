"""Descriptive statistics of lists of numbers."""

from . import mathutil


def median(values):
    """Middle value of a non-empty list (mean of the two middle ones for an even count)."""
    ordered = sorted(values)
    mid = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[mid]
    return (ordered[mid - 1] + ordered[mid]) / 2


def moving_average(values, window):
    """Means of every run of `window` consecutive values."""
    return [mathutil.mean(values[i : i + window]) for i in range(len(values) - window + 1)]


def histogram(values, buckets, low, high):
    """Counts of values in `buckets` equal-width buckets over [low, high]; outliers go to the end buckets."""
    counts = [0] * buckets
    for value in values:
        slot = (value - low) * buckets // (high - low)
        counts[mathutil.clamp(slot, 0, buckets - 1)] += 1
    return counts


def summary(values):
    """(smallest, median, largest) of a non-empty list."""
    return (min(values), median(values), max(values))


def peak_average(values, window):
    """The largest of the moving averages."""
    return max(moving_average(values, window))
