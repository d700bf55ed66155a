"""Moved to `serving` (issue 35: the serving layer is its own package on the ground floor).

This path keeps working and warns once per process; import from `serving` instead. The submodules
(`tools.serving.app`, `.body`, `.cli`, `.errors`, `.gate`) are now `serving.app`, ... and have no shim.
"""

import warnings

from serving import (
    AdmissionGate,
    RequestError,
    add_server_args,
    check_token,
    error_body,
    is_loopback,
    json_response,
    make_app,
    parse_json_object,
    plain_json,
    read_body,
    run_server,
    server_settings,
)

__all__ = [
    "AdmissionGate",
    "RequestError",
    "add_server_args",
    "check_token",
    "error_body",
    "is_loopback",
    "json_response",
    "make_app",
    "parse_json_object",
    "plain_json",
    "read_body",
    "run_server",
    "server_settings",
]

warnings.warn("tools.serving moved to serving; import from there", DeprecationWarning, stacklevel=2)
