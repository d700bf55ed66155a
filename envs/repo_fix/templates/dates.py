"""Gregorian calendar arithmetic."""


def is_leap(year):
    """True for leap years: divisible by 4, except centuries not divisible by 400."""
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def days_in_month(year, month):
    """Days in `month` (1-12) of `year`."""
    if month == 2:
        return 29 if is_leap(year) else 28
    return 30 if month in (4, 6, 9, 11) else 31


def day_of_year(year, month, day):
    """1 for January 1st, up to 365 or 366."""
    return sum(days_in_month(year, m) for m in range(1, month)) + day
