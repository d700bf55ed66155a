"""A model given as neither a folder nor a model name: a Hugging Face Hub id, or a mistake.

``model=Qwen/Qwen2.5-0.5B-Instruct`` answered "the path does not exist", and a misspelt name the same,
although the docs promise the named models are listed. turngym downloads nothing at run time: a Hub id
whose snapshot is already in the local Hugging Face cache is used from there (looked up with
``local_files_only``, no network), and any other gets one line with the command that fetches it once.
Anything else that is no path gets the named models.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from turngym.common.cli_errors import did_you_mean
from turngym.engines.named_models import EMBEDDED, GGUF_PREFIX, NAMED_MODELS

# `org/name`: the shape of a Hugging Face Hub repo id (a relative path of two parts has it too).
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def looks_like_hub_id(model: str) -> bool:
    """Whether ``model`` has a Hub repo id's shape (``org/name``) and is no existing path.

    >>> looks_like_hub_id("Qwen/Qwen2.5-0.5B-Instruct"), looks_like_hub_id("./models/x"), looks_like_hub_id("x")
    (True, False, False)
    """
    return bool(HUB_ID.match(model)) and not Path(model).expanduser().exists()


def cached_hub_snapshot(model: str) -> Path | None:
    """The local snapshot of Hub repo ``model`` when the Hugging Face cache holds it whole, else None.

    Only the cache is read (``local_files_only``): no network. ``$HF_HUB_CACHE`` (or ``$HF_HOME/hub``) is
    read at each call, so the cache the command was started with is the one looked in.
    """
    if not looks_like_hub_id(model):
        return None
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        return None
    cache = os.environ.get("HF_HUB_CACHE") or (
        str(Path(os.environ["HF_HOME"]) / "hub") if os.environ.get("HF_HOME") else None
    )
    try:
        folder = Path(snapshot_download(model, local_files_only=True, cache_dir=cache))
    except Exception:  # noqa: BLE001 - not cached (LocalEntryNotFoundError) or a malformed cache entry
        return None
    return folder if (folder / "config.json").is_file() else None


def model_not_found(model: str, key: str = "model") -> str:
    """The one line for a model that is no path and no model name: how to fetch a Hub id, or the names.

    Args:
        model: what was given.
        key: the option that gave it (``model``, ``--model-path``).

    Returns:
        One line saying what is wrong and what to do.

    Example:
        >>> model_not_found("Qwen/Qwen2.5-0.5B-Instruct")  # doctest: +ELLIPSIS
        'model=Qwen/Qwen2.5-0.5B-Instruct: the path does not exist here, and as a Hugging Face Hub id it is not in the local cache; turngym downloads nothing at run time: fetch it once with `hf download Qwen/Qwen2.5-0.5B-Instruct --local-dir models/Qwen2.5-0.5B-Instruct`, then give model=models/Qwen2.5-0.5B-Instruct'
    """
    if looks_like_hub_id(model):
        local = f"models/{model.split('/', 1)[1]}"
        return (
            f"{key}={model}: the path does not exist here, and as a Hugging Face Hub id it is not in the local "
            f"cache; turngym downloads nothing at run time: fetch it once with `hf download {model} "
            f"--local-dir {local}`, then give {key}={local}"
        )
    names = [*NAMED_MODELS, EMBEDDED]
    near = did_you_mean(model, names)
    listed = ", ".join(f"{name} ({entry.description})" for name, entry in NAMED_MODELS.items())
    return (
        f"{key}={model}: the path does not exist and it is no model name{' (' + near + ')' if near else ''}; "
        f"give a Hugging Face model directory, a training run or checkpoint folder, {GGUF_PREFIX}<file>, or "
        f"a named model: {listed}, {EMBEDDED} (the embedded tiny model)"
    )
