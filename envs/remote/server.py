"""Moved to `envs.server.app` (issue 35: the env server lives apart from the env clients).

This path keeps working and warns once per process; import from `envs.server.app` instead, and run
the server with `python -m envs serve`. The server's other modules (`envs.remote.worker`, `workers`,
`operator_config`, `openenv`) moved to `envs.server` without a shim.
"""

import warnings

from envs.server.app import (
    ROUTES,
    TOKEN_ENV,
    ServerState,
    Session,
    SessionTable,
    client_of,
    create_app,
    main,
    serve,
    sessions_per_client,
)

__all__ = [
    "ROUTES",
    "TOKEN_ENV",
    "ServerState",
    "Session",
    "SessionTable",
    "client_of",
    "create_app",
    "main",
    "serve",
    "sessions_per_client",
]

warnings.warn(
    "envs.remote.server moved to envs.server.app; import from there (or run `python -m envs serve`)",
    DeprecationWarning,
    stacklevel=2,
)

if __name__ == "__main__":
    raise SystemExit(main())
