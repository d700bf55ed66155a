"""Moved to `engines.serve` (issue 35: the engines and named models have their own package).

This path keeps working and warns once per process; import from `engines.serve` instead.
`python -m rollout.serve` still runs; the command is now `python -m engines.serve`.
"""

import warnings

from engines.serve import (
    ROUTES,
    TOKEN_ENV,
    ModelServer,
    alive,
    create_app,
    flush_cache,
    generate,
    health_generate,
    main,
    model_info,
)

__all__ = [
    "ModelServer",
    "ROUTES",
    "TOKEN_ENV",
    "alive",
    "create_app",
    "flush_cache",
    "generate",
    "health_generate",
    "main",
    "model_info",
]

warnings.warn(
    "rollout.serve moved to engines.serve; import from there",
    DeprecationWarning,
    stacklevel=1 if __name__ == "__main__" else 2,
)

if __name__ == "__main__":
    raise SystemExit(main())
