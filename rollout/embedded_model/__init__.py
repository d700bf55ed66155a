"""Moved to `turngym.engines.embedded_model` (issue 35: the engines and named models have their own package).

This path keeps working and warns once per process; import from `turngym.engines.embedded_model` instead.
`python -m rollout.embedded_model` still runs; the command is now `python -m turngym.engines.embedded_model`.
Its submodules (`model`, `tokenizer`, `corpus`, `chat_templates`) moved without a shim.
"""

import warnings

from turngym.engines.embedded_model import (
    CHAT_TEMPLATES,
    MODEL_CONFIG,
    SPECIAL_TOKENS,
    STOP_TOKENS,
    VOCAB_SIZE,
    build_embedded_model,
    is_embedded_model_dir,
    main,
)

__all__ = [
    "CHAT_TEMPLATES",
    "MODEL_CONFIG",
    "SPECIAL_TOKENS",
    "STOP_TOKENS",
    "VOCAB_SIZE",
    "build_embedded_model",
    "is_embedded_model_dir",
    "main",
]

warnings.warn(
    "rollout.embedded_model moved to turngym.engines.embedded_model; import from there",
    DeprecationWarning,
    stacklevel=2,
)
