"""Moved to `chat.encoder` (issue 35: chat prompts are encoded on the chat ground floor).

This path keeps working and warns once per process; import `ChatEncoder` from `chat.encoder` instead.
"""

import warnings

from chat.encoder import ChatEncoder, special_token_strings

__all__ = ["ChatEncoder", "special_token_strings"]

warnings.warn(
    "tools.chat_encoding moved to chat.encoder; import ChatEncoder from there",
    DeprecationWarning,
    stacklevel=2,
)
