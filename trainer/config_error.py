"""The error every config check raises; its own module so that any trainer module can import it."""

from __future__ import annotations


class ConfigError(ValueError):
    """A bad override, unknown group choice or unknown env id; the message names the valid choices."""
