"""Moved to `engines.sglang_engine` (issue 35: the engines and named models have their own package).

This path keeps working and warns once per process; import from `engines.sglang_engine` instead.
"""

import warnings

from engines.sglang_engine import (
    SGLANG_SAMPLING_KEYS,
    SGLangEngine,
    parse_generate_response,
    to_sglang_sampling,
)

__all__ = ["SGLANG_SAMPLING_KEYS", "SGLangEngine", "parse_generate_response", "to_sglang_sampling"]

warnings.warn(
    "rollout.sglang_engine moved to engines.sglang_engine; import from there",
    DeprecationWarning,
    stacklevel=2,
)
