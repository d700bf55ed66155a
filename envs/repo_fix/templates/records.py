"""Name records: parsing lines and indexing names."""

from . import textutil


def parse_line(line):
    """Fields of a comma-separated line, with surrounding spaces removed."""
    return [field.strip() for field in line.split(",")]


def index_by_slug(names):
    """Map each name's slug to the first name that has it."""
    index = {}
    for name in names:
        key = textutil.slugify(name)
        if key not in index:
            index[key] = name
    return index


def short_names(names, width):
    """Names cut to `width` characters, sorted case-insensitively."""
    return sorted((textutil.truncate(name, width) for name in names), key=str.lower)


def parse_table(text):
    """Fields of every non-blank line of comma-separated text."""
    return [parse_line(line) for line in text.splitlines() if line.strip()]


def total_words(names):
    """Words in all the names together."""
    return sum(textutil.word_count(name) for name in names)
