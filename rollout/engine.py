"""Moved to `engines.engine` (issue 35: the engines and named models have their own package).

This path keeps working and warns once per process; import from `engines.engine` instead.
"""

import warnings

from engines.engine import Engine, EngineError, EngineRequestError, Generation, SamplingParams, chat_kwargs

__all__ = ["Engine", "EngineError", "EngineRequestError", "Generation", "SamplingParams", "chat_kwargs"]

warnings.warn(
    "rollout.engine moved to engines.engine; import from there",
    DeprecationWarning,
    stacklevel=2,
)
