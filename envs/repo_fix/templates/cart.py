"""A shopping cart: (price, quantity) pairs in whole cents."""

from . import money


def line_total(price, quantity):
    """Cost of one cart line."""
    return price * quantity


def cart_total(items):
    """Sum of the line totals of (price, quantity) pairs."""
    total = 0
    for price, quantity in items:
        total += line_total(price, quantity)
    return total


def checkout(items, discount_pct, tax_pct):
    """What the customer pays: the cart total, discounted first, then taxed."""
    discounted = money.apply_discount(cart_total(items), discount_pct)
    return money.add_tax(discounted, tax_pct)


def split_bill(items, people):
    """Each person's share of the cart total, larger shares first."""
    return money.split_evenly(cart_total(items), people)
