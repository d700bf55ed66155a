"""Prices in whole cents: discounts, tax and splitting a bill."""

from . import mathutil


def apply_discount(price, pct):
    """Price after a discount of `pct` percent (clamped to 0-100), rounded in the customer's favour."""
    pct = mathutil.clamp(pct, 0, 100)
    return price - mathutil.percent_of(price, pct)


def add_tax(price, rate_pct):
    """Price with `rate_pct` percent tax added, the tax rounded half up to the cent."""
    return price + (price * rate_pct + 50) // 100


def split_evenly(total, parts):
    """`total` split into `parts` shares that differ by at most one cent, larger shares first."""
    base, extra = divmod(total, parts)
    return [base + 1 if i < extra else base for i in range(parts)]
