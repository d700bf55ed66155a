"""Moved to `chat.message` (issue 35: `Message` is defined once, on the ground floor).

This path keeps working and warns once per process; import from `chat.message` instead.
"""

import warnings

from chat.message import Message, assistant, system, tool_result, user

__all__ = ["Message", "assistant", "system", "tool_result", "user"]

warnings.warn(
    "envs.messages moved to chat.message; import Message and the constructors from there",
    DeprecationWarning,
    stacklevel=2,
)
