"""Moved to `common.registration` (issue 35: the shared utilities sit on the ground floor, in `common`).

This path keeps working and warns once per process; import from `common.registration` instead.
"""

import warnings

from common.registration import (
    EntryPoint,
    EntryPointError,
    EntrySpec,
    Registry,
    SpecT,
    check_entry_point,
    load_entry_point,
)

__all__ = [
    "EntryPoint",
    "EntryPointError",
    "EntrySpec",
    "Registry",
    "SpecT",
    "check_entry_point",
    "load_entry_point",
]

warnings.warn(
    "tools.registration moved to common.registration; import from there",
    DeprecationWarning,
    stacklevel=2,
)
