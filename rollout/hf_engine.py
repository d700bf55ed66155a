"""Moved to `engines.hf_engine` (issue 35: the engines and named models have their own package).

This path keeps working and warns once per process; import from `engines.hf_engine` instead.
"""

import warnings

from engines.hf_engine import EngineStats, HFEngine

__all__ = ["EngineStats", "HFEngine"]

warnings.warn(
    "rollout.hf_engine moved to engines.hf_engine; import from there",
    DeprecationWarning,
    stacklevel=2,
)
