"""Moved to `common.run_sync` (issue 35: the shared utilities sit on the ground floor, in `common`).

This path keeps working and warns once per process; import from `common.run_sync` instead.
"""

import warnings

from common.run_sync import run_sync

__all__ = ["run_sync"]

warnings.warn(
    "tools.run_sync moved to common.run_sync; import from there",
    DeprecationWarning,
    stacklevel=2,
)
