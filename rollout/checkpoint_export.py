"""Moved to `engines.checkpoint_export` (issue 35: the engines and named models have their own package).

This path keeps working and warns once per process; import from `engines.checkpoint_export` instead.
"""

import warnings

from engines.checkpoint_export import (
    COMPLETE,
    EXPORT_DIR,
    LATEST,
    RUN_CONFIG,
    RUN_RECORD,
    TRUST_HINT,
    WEIGHT_PATTERNS,
    CheckpointError,
    actor_dir,
    export_actor,
    export_stamp,
    export_target,
    is_hf_model_dir,
    latest_step_dir,
    resolve_model,
    run_dir,
)

__all__ = [
    "COMPLETE",
    "CheckpointError",
    "EXPORT_DIR",
    "LATEST",
    "RUN_CONFIG",
    "RUN_RECORD",
    "TRUST_HINT",
    "WEIGHT_PATTERNS",
    "actor_dir",
    "export_actor",
    "export_stamp",
    "export_target",
    "is_hf_model_dir",
    "latest_step_dir",
    "resolve_model",
    "run_dir",
]

warnings.warn(
    "rollout.checkpoint_export moved to engines.checkpoint_export; import from there",
    DeprecationWarning,
    stacklevel=2,
)
