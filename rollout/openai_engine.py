"""Moved to `engines.openai_engine` (issue 35: the engines and named models have their own package).

This path keeps working and warns once per process; import from `engines.openai_engine` instead.
"""

import warnings

from engines.openai_engine import (
    TEXT_ONLY_NOTE,
    OpenAIEngine,
    chat_endpoint,
    to_openai_messages,
    to_openai_sampling,
)

__all__ = ["OpenAIEngine", "TEXT_ONLY_NOTE", "chat_endpoint", "to_openai_messages", "to_openai_sampling"]

warnings.warn(
    "rollout.openai_engine moved to engines.openai_engine; import from there",
    DeprecationWarning,
    stacklevel=2,
)
