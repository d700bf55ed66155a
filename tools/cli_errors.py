"""Moved to `common.cli_errors` (issue 35: the shared utilities sit on the ground floor, in `common`).

This path keeps working and warns once per process; import from `common.cli_errors` instead.
"""

import warnings

from common.cli_errors import (
    INTERRUPT_EXIT,
    USAGE_EXIT,
    ArgumentParser,
    UsageError,
    check_output_file,
    check_port_free,
    close_names,
    did_you_mean,
    make_parent,
    one_line,
    run_cli,
)

__all__ = [
    "ArgumentParser",
    "INTERRUPT_EXIT",
    "USAGE_EXIT",
    "UsageError",
    "check_output_file",
    "check_port_free",
    "close_names",
    "did_you_mean",
    "make_parent",
    "one_line",
    "run_cli",
]

warnings.warn(
    "tools.cli_errors moved to common.cli_errors; import from there",
    DeprecationWarning,
    stacklevel=2,
)
