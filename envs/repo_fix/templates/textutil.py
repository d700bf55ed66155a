"""Text helpers."""


def slugify(text):
    """Lower-case runs of letters and digits joined by hyphens ('Hello, World!' -> 'hello-world')."""
    words = []
    current = ""
    for ch in text.lower():
        if ch.isalnum():
            current += ch
        elif current:
            words.append(current)
            current = ""
    if current:
        words.append(current)
    return "-".join(words)


def truncate(text, width):
    """`text` cut to at most `width` characters (width >= 3), ending in '...' when it was cut."""
    if len(text) <= width:
        return text
    return text[: width - 3] + "..."


def word_count(text):
    """Number of words separated by any whitespace."""
    return len(text.split())
