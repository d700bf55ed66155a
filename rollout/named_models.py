"""Moved to `turngym.engines.named_models` (issue 35: the engines and named models have their own package).

This path keeps working and warns once per process; import from `turngym.engines.named_models` instead.
`python -m rollout.named_models` still runs; the command is now `python -m turngym.engines.named_models`.
"""

import warnings

from turngym.engines.named_models import (
    CACHE_ENV,
    CONVERSION_FORMAT,
    EMBEDDED,
    GGUF_PREFIX,
    GGUF_REQUIREMENT,
    NAMED_MODELS,
    RECORD,
    SAVED_DTYPE,
    SERVED_MODEL_FIELD,
    GGUFInfo,
    MissingPackageError,
    ModelSourceError,
    NamedModel,
    cached_model_dir,
    convert_gguf,
    file_sha256,
    gguf_source,
    is_embedded,
    is_model_name,
    main,
    model_name_of,
    models_cache_dir,
    read_gguf_info,
    resolve_named_model,
    served_model_name,
)

__all__ = [
    "CACHE_ENV",
    "CONVERSION_FORMAT",
    "SERVED_MODEL_FIELD",
    "EMBEDDED",
    "GGUFInfo",
    "GGUF_PREFIX",
    "GGUF_REQUIREMENT",
    "MissingPackageError",
    "ModelSourceError",
    "NAMED_MODELS",
    "NamedModel",
    "RECORD",
    "SAVED_DTYPE",
    "cached_model_dir",
    "convert_gguf",
    "file_sha256",
    "gguf_source",
    "is_embedded",
    "is_model_name",
    "main",
    "model_name_of",
    "models_cache_dir",
    "read_gguf_info",
    "resolve_named_model",
    "served_model_name",
]

warnings.warn(
    "rollout.named_models moved to turngym.engines.named_models; import from there",
    DeprecationWarning,
    stacklevel=1 if __name__ == "__main__" else 2,
)

if __name__ == "__main__":
    raise SystemExit(main())
