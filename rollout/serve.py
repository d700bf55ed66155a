"""Moved to `turngym.engines.serve` (issue 35: the engines and named models have their own package).

This path keeps working and warns once per process; import from `turngym.engines.serve` instead.
`python -m rollout.serve` still runs; the command is now `python -m turngym.engines.serve`.
"""

import warnings

from turngym.engines.serve import (
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
    "rollout.serve moved to turngym.engines.serve; import from there",
    DeprecationWarning,
    stacklevel=1 if __name__ == "__main__" else 2,
)

if __name__ == "__main__":
    raise SystemExit(main())
