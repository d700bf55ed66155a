"""Turn what a training run leaves behind into a Hugging Face model directory an engine can load.

``resolve_model(path)`` accepts a model name or ``gguf:<file>`` (``turngym/engines/named_models.py``: converted
once into a cached directory), a Hugging Face model directory (used as is), a run folder
(``outputs/<env>``: its latest checkpoint), a checkpoints folder, a ``global_step_N`` folder, an
FSDP actor folder (``.../actor``) or the config-only ``.../actor/huggingface`` folder verl writes
beside the shards. Shards are merged by verl's own model merger (``python -m verl.model_merger``)
into ``<run>/export/global_step_N/`` (``global_step_N/actor_hf/`` for a checkpoint outside a run
folder), once: later calls reuse it while the shards are unchanged.

A checkpoint folder may come from anyone, and a ``.pt`` shard is a pickle that can run code when loaded.
The merger therefore runs with ``TORCH_FORCE_WEIGHTS_ONLY_LOAD=1``: shards load as tensors only (verl's
FSDP2 shards, DTensors, pass), and a shard holding anything else is refused in one line. Only an explicit
``trust_checkpoint=True`` (``rollout.eval trust_checkpoint=true``, ``turngym.engines.serve --trust-checkpoint``)
lets the full unpickler run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from turngym.engines.lora_merge import merge_lora_adapter
from turngym.engines.model_lookup import cached_hub_snapshot, model_not_found
from turngym.engines.named_models import ModelSourceError, is_model_name, resolve_named_model

LATEST = "latest_checkpointed_iteration.txt"
EXPORT_DIR = "actor_hf"
COMPLETE = ".turngym-export-complete"
WEIGHT_PATTERNS = ("*.safetensors", "pytorch_model*.bin")
# verl writes these when a run starts (engines never import trainer; they only read its files).
RUN_RECORD = "run.json"
RUN_CONFIG = "config.yaml"


TRUST_HINT = "pass trust_checkpoint=true (rollout.eval) or --trust-checkpoint (turngym.engines.serve)"
# What torch says when the weights-only unpickler meets a global it does not allow.
_WEIGHTS_ONLY_REFUSAL = "Weights only load failed"


class CheckpointError(ValueError):
    """A path that is neither a model directory nor a turngym/verl checkpoint; the message says what it is."""


def is_hf_model_dir(path: Path) -> bool:
    """A directory with a model config and weights (what ``from_pretrained`` loads)."""
    return (path / "config.json").is_file() and any(
        next(path.glob(pattern), None) for pattern in WEIGHT_PATTERNS
    )


def _is_actor_dir(path: Path) -> bool:
    return any(path.glob("model_world_size_*_rank_*.pt"))


def latest_step_dir(checkpoints: Path) -> Path:
    """``<checkpoints>/global_step_<N>`` for the step named in ``latest_checkpointed_iteration.txt``."""
    try:
        step = int((checkpoints / LATEST).read_text().strip())
    except (OSError, ValueError) as exc:
        raise CheckpointError(
            f"{checkpoints}: no readable {LATEST}; is this a training run's folder?"
        ) from exc
    return checkpoints / f"global_step_{step}"


def actor_dir(path: Path) -> Path | None:
    """The FSDP actor folder a run/checkpoint path points at, or None when it is not a checkpoint."""
    if path.name == "huggingface" and _is_actor_dir(path.parent):
        return path.parent
    if _is_actor_dir(path):
        return path
    if _is_actor_dir(path / "actor"):
        return path / "actor"
    for checkpoints in (path, path / "checkpoints"):
        if (checkpoints / LATEST).exists():
            return actor_dir(latest_step_dir(checkpoints))
    return None


def run_dir(path: Path) -> Path | None:
    """The run folder (with ``run.json``) a model path lies in, if any: its env settings and budgets."""
    for candidate in (path, *path.parents):
        if (candidate / RUN_RECORD).is_file() or (candidate / "checkpoints" / LATEST).exists():
            return candidate
    return None


def export_target(actor: Path) -> Path:
    """Where an actor checkpoint is exported: ``<run>/export/global_step_N`` or ``global_step_N/actor_hf``."""
    step = actor.parent
    if step.parent.name == "checkpoints" and (step.parent / LATEST).exists():
        return step.parent.parent / "export" / step.name
    return step / EXPORT_DIR


def export_stamp(actor: Path) -> dict:
    """What an export was made from: the actor folder and its shards' modification times."""
    return {"source": str(actor.resolve()), "shards": _shards_stamp(actor)}


def _shards_stamp(actor: Path) -> dict[str, int]:
    # A run restarted from scratch (resume_mode=disable) rewrites global_step_N: re-export then.
    return {p.name: p.stat().st_mtime_ns for p in sorted(actor.glob("model_world_size_*_rank_*.pt"))}


def export_actor(actor: Path, target: Path | None = None, *, trust_checkpoint: bool = False) -> Path:
    """Merge an FSDP actor checkpoint into a Hugging Face directory with verl's merger; cached.

    Shards load with ``weights_only=True`` unless ``trust_checkpoint`` (the full unpickler runs any code
    a shard carries: only for folders whose origin the user vouches for).
    """
    target = target or export_target(actor)
    stamp = export_stamp(actor)
    try:
        if json.loads((target / COMPLETE).read_text()) == stamp and is_hf_model_dir(target):
            return target
    except (OSError, ValueError):
        pass
    (target / COMPLETE).unlink(missing_ok=True)  # a merge that dies half-way must not look finished
    env = dict(os.environ)
    repo = str(Path(__file__).resolve().parents[2])  # the repository root: turngym/engines/ is two down
    env["PYTHONPATH"] = os.pathsep.join(p for p in (repo, env.get("PYTHONPATH", "")) if p)
    # verl's merger calls torch.load(weights_only=False); torch's own switch overrides the argument.
    env.pop("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", None)
    if trust_checkpoint:
        env.pop("TORCH_FORCE_WEIGHTS_ONLY_LOAD", None)
    else:
        env["TORCH_FORCE_WEIGHTS_ONLY_LOAD"] = "1"
    if not _cuda_available():
        # verl has no CPU platform of its own: the merger loads turngym's through verl's plugin hook.
        env.update(VERL_USE_EXTERNAL_MODULES="trainer.cpu", VERL_PLATFORM="cpu")
    cmd = [sys.executable, "-m", "verl.model_merger", "merge", "--backend", "fsdp"]
    cmd += ["--local_dir", str(actor), "--target_dir", str(target)]
    # A merge takes a minute or more for a real model: say so, then how long it took (on stderr,
    # beside the progress bars, so stdout keeps only results).
    print(f"exporting {actor} to {target} with verl's model merger (once per checkpoint)", file=sys.stderr)
    started = time.monotonic()
    result = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if result.returncode != 0 and _WEIGHTS_ONLY_REFUSAL in result.stderr and not trust_checkpoint:
        raise CheckpointError(
            f"{actor}: a shard holds more than tensors, and loading it could run code it carries; it was "
            f"not exported. If you trust where this checkpoint came from, {TRUST_HINT}"
        )
    if result.returncode != 0 or not is_hf_model_dir(target):
        last = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise CheckpointError(f"exporting {actor} with verl's model merger failed: {last}")
    if merge_lora_adapter(target):
        print("merged the run's LoRA adapter into the exported weights", file=sys.stderr)
    print(f"export done in {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
    (target / COMPLETE).write_text(json.dumps(stamp) + "\n")
    return target


def _cuda_available() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_available())
    except ImportError:
        return False


def resolve_model(path: str | Path, *, trust_checkpoint: bool = False) -> Path:
    """A Hugging Face model directory for any model name, GGUF, model/run/checkpoint path, exported when needed.

    Args:
        path: a name (``smollm2-135m-instruct``, ``embedded``), ``gguf:<file>``, a directory, or a Hugging
            Face Hub id whose snapshot the local cache holds (nothing is downloaded).
        trust_checkpoint: let a checkpoint's shards load with the full unpickler (which runs any code a
            shard carries); by default they load as tensors only and anything else is refused.

    Returns:
        A directory ``from_pretrained`` loads.

    Raises:
        CheckpointError: one line saying what is wrong (a missing package, a bad file, a wrong folder).
    """
    if is_model_name(path):
        try:
            return resolve_named_model(str(path))
        except ModelSourceError as exc:
            raise CheckpointError(str(exc)) from None
    given = str(path)
    path = Path(path).expanduser()
    if not path.exists():
        snapshot = cached_hub_snapshot(given)  # a Hub id already in the local cache: no download
        if snapshot is not None:
            return snapshot
        raise CheckpointError(model_not_found(given))
    if is_hf_model_dir(path):
        return path
    actor = actor_dir(path)
    if actor is None:
        raise CheckpointError(
            f"model={path}: neither a Hugging Face model directory (config.json + weights) nor a run, "
            "checkpoint or actor folder"
        )
    return export_actor(actor, trust_checkpoint=trust_checkpoint)
