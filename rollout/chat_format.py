"""Moved to `chat.format` (issue 35: ChatFormat sits on the chat ground floor beside ChatEncoder).

This path keeps working and warns once per process; import `ChatFormat` from `chat.format` instead.
"""

import warnings

from chat.format import ChatFormat, TemplateError

__all__ = ["ChatFormat", "TemplateError"]

warnings.warn(
    "rollout.chat_format moved to chat.format; import ChatFormat from there",
    DeprecationWarning,
    stacklevel=2,
)
