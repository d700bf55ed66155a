"""The error every config check raises; its own module so that any trainer module can import it."""

from __future__ import annotations

from turngym.common.cli_errors import UsageError


class ConfigError(UsageError, ValueError):
    """A bad override, unknown group choice or unknown env id; the message names the valid choices.

    A ``UsageError`` (trainer.run reports it in one line, exit code 2) and, for its older callers, a
    ``ValueError``.
    """
