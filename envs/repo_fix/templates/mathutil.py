"""Small numeric helpers."""


def clamp(value, low, high):
    """`value` limited to the range [low, high]."""
    if value < low:
        return low
    if value > high:
        return high
    return value


def mean(values):
    """Arithmetic mean of a non-empty list."""
    return sum(values) / len(values)


def percent_of(amount, pct):
    """`pct` percent of a whole amount, rounded down."""
    return amount * pct // 100
