"""Moved to `chat.engine` (issue 35: the engine contract sits on the ground floor).

This path keeps working and warns once per process; import from `chat.engine` instead.
"""

import warnings

from chat.engine import Engine, chat_kwargs

__all__ = ["Engine", "chat_kwargs"]

warnings.warn(
    "interactions.engine moved to chat.engine; import Engine and chat_kwargs from there",
    DeprecationWarning,
    stacklevel=2,
)
