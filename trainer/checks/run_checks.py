"""Checks before anything is written or Ray starts: the model path, verl registry names, and the run folder.

A run folder (``turngym.output_dir``) records what it was trained with in ``run.json``; a command whose
env mixture, episodes, algorithm, critic, policy loss or model differ from what the folder holds is
refused (resuming it would load checkpoints of another run, or train on other rows), naming the keys
that differ and the ways to start afresh. Folders from before the record are read from what they hold
(the dataset's env ids and kwargs, whether the checkpoint has a critic).

A resume loads the checkpoint's ``.pt`` files with verl's ``torch.load(weights_only=False)``, which runs
any code a pickle carries: a crafted ``model_world_size_1_rank_0.pt`` in a folder given as
``trainer.resume_from_path`` (or planted as the latest checkpoint of ``turngym.output_dir``) ran. Before
Ray starts, ``check_resume_checkpoint`` loads each of them with torch's weights-only unpickler (tensors,
DTensors, plain containers and the numpy RNG state verl saves) and refuses the resume in one line
otherwise; ``+turngym.trust_checkpoint=true`` skips that for a checkpoint whose origin the user vouches for.

``turngym.run_name=NAME`` starts a fresh run beside the default one: its folder is
``<turngym.output_dir>/runs/NAME`` (``outputs/<env name>/runs/NAME`` by default); without it the run's
folder is ``turngym.output_dir`` itself, as before.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from rollout.episode_kind import EpisodeKind
from rollout.episode_row import decode_kwargs
from trainer.checks.resume_settings import (
    FIRST_CONFIG,
    check_resume_settings,
    config_yaml,
    describe,
    settings_since,
    write_resumed_config,
)
from trainer.compose import ConfigError, env_entries
from trainer.run_folder.files import read_run_file, write_run_file
from turngym.common.cli_errors import UsageError, check_output_file
from turngym.engines.model_lookup import model_not_found

RUN_RECORD = "run.json"
# Files a Hugging Face model directory has; a tokenizer needs one of these.
MODEL_CONFIG = "config.json"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json")
# Named runs live in <turngym.output_dir>/runs/<run_name>, apart from the default run's own folders.
RUNS_FOLDER = "runs"
_RUN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
_DEFAULT_EXPERIMENT_NAME = "${env.name}"


def apply_run_name(cfg: DictConfig) -> None:
    """``turngym.run_name=NAME``: the run's folder becomes ``<turngym.output_dir>/runs/NAME``; ConfigError if
    the name is not a plain folder name. Without a name nothing changes."""
    name = cfg.turngym.get("run_name")
    if name is None or str(name) == "":
        return
    name = str(name)
    if not _RUN_NAME.match(name):
        raise ConfigError(
            f"turngym.run_name={name!r}: use a folder name of letters, digits, '.', '_' and '-' "
            "(the run goes to <turngym.output_dir>/runs/<run_name>)"
        )
    cfg.turngym.output_dir = str(Path(str(cfg.turngym.output_dir)) / RUNS_FOLDER / name)
    raw = OmegaConf.to_container(cfg.trainer, resolve=False).get("experiment_name")
    if raw == _DEFAULT_EXPERIMENT_NAME:  # trackers (wandb, ...) tell the named run from the default one
        cfg.trainer.experiment_name = f"{cfg.env.name}-{name}"


def fresh_run_hint(cfg: DictConfig) -> str:
    """How to start afresh beside the run in ``turngym.output_dir``: a run name (with its folder)."""
    out = Path(str(cfg.turngym.output_dir))
    name = cfg.turngym.get("run_name")
    base = out.parent.parent if name else out
    return f"turngym.run_name=NAME (a fresh run in {base / RUNS_FOLDER}/NAME)"


def check_model_dir(model: str, key: str = "model") -> None:
    """A model path must be a directory with a config and a tokenizer; raises ConfigError in one line."""
    path = Path(model).expanduser()
    if not path.exists():
        # Not a Hub id in the local cache either (resolve_model_option swapped such an id for its
        # snapshot): turngym downloads nothing at run time; the line says how to fetch it, or the names.
        raise ConfigError(model_not_found(model, key))
    if not path.is_dir():
        raise ConfigError(f"{key}={model}: not a directory; give a Hugging Face model directory")
    if not (path / MODEL_CONFIG).exists():
        hint = ""
        if (path / "huggingface").is_dir() or any(path.glob("model_world_size_*_rank_*.pt")):
            hint = " (a verl checkpoint: evaluate it with rollout.eval, which exports it)"
        raise ConfigError(f"{key}={model}: no {MODEL_CONFIG}, so not a Hugging Face model directory{hint}")
    if not any((path / name).exists() for name in TOKENIZER_FILES):
        raise ConfigError(
            f"{key}={model}: no tokenizer ({', '.join(TOKENIZER_FILES)}); copy the base model's tokenizer there"
        )


def _uses_critic(cfg: DictConfig) -> bool:
    enable = cfg.critic.get("enable")
    return bool(enable) if enable is not None else str(cfg.algorithm.adv_estimator) == "gae"


def run_identity(cfg: DictConfig) -> dict[str, Any]:
    """What makes two commands the same run: what its rows, checkpoints and model depend on."""
    model = cfg.turngym.model
    return {
        "env": _env_identity(cfg),
        "env.train_episodes": int(cfg.env.train_episodes),
        "env.val_episodes": int(cfg.env.val_episodes),
        "env.seed_base": int(cfg.env.seed_base),
        "env.val_seed_base": int(cfg.env.val_seed_base),
        "algorithm.adv_estimator": str(cfg.algorithm.adv_estimator),
        "critic": _uses_critic(cfg),
        "actor_rollout_ref.actor.policy_loss.loss_mode": str(
            cfg.actor_rollout_ref.actor.policy_loss.loss_mode
        ),
        "model": str(Path(model).expanduser().resolve()) if model else "embedded",
        "data": _data_identity(cfg),
    }


def _env_identity(cfg: DictConfig) -> list[dict[str, Any]]:
    """The env mixture: env.* entries, or the kinds in the user's own training rows (weight: row count)."""
    from trainer.data.user_rows import read_episodes, user_files

    source = user_files(cfg).get("train_files")
    if source is None:
        entries = env_entries(cfg)
    else:
        counts: dict[EpisodeKind, int] = {}
        for env_id, _, kwargs in read_episodes(source, "train_files"):
            kind = EpisodeKind(env_id, kwargs)
            counts[kind] = counts.get(kind, 0) + 1
        return [kind.entry(float(n)) for kind, n in sorted(counts.items())]
    return [EpisodeKind.from_entry(e).entry(e["weight"]) for e in entries]


def _data_identity(cfg: DictConfig) -> dict[str, Any] | str:
    """``generated`` (rows from env.*), or the user's own files with their sha256 (trainer.data.user_rows)."""
    from trainer.data.user_rows import file_digest, user_files

    files = user_files(cfg)
    if not files:
        return "generated"
    return {
        key: {"file": str(path), "sha256": file_digest(path) if path.is_file() else None}
        for key, path in sorted(files.items())
    }


def _checkpoint_dir(cfg: DictConfig) -> Path | None:
    ckpt = Path(str(cfg.trainer.default_local_dir)).expanduser()
    try:
        step = int((read_run_file(ckpt / "latest_checkpointed_iteration.txt") or "").strip())
    except (OSError, ValueError):
        return None
    return ckpt / f"global_step_{step}"


def _shown(value: Any) -> str:
    if isinstance(value, list):  # env mixtures: ids with kwargs, weights left out unless they differ
        return "[" + ", ".join(f"{e['id']}{e['kwargs'] or ''}" for e in value) + "]"
    if isinstance(value, dict):  # own dataset files: which file, and a short digest of its content
        return (
            "{"
            + ", ".join(f"{k}: {v['file']} sha256 {str(v['sha256'])[:12]}" for k, v in value.items())
            + "}"
        )
    return str(value)


def _differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    return [
        f"{key} {_shown(old[key])} -> {_shown(new.get(key))}"
        for key in old
        if key in new and old[key] != new[key]
    ]


def _recorded_from_folder(cfg: DictConfig, checkpoint: Path, new: dict[str, Any]) -> dict[str, Any]:
    """For a folder without run.json: what it shows of its run (critic, dataset envs)."""
    seen: dict[str, Any] = {}
    if checkpoint.is_dir():
        seen["critic"] = (checkpoint / "critic").is_dir()
    from trainer.data.run_data import run_data_path

    train_file = run_data_path(cfg, "train_files")
    if train_file.exists():
        import pandas as pd

        try:
            info = pd.read_parquet(train_file, columns=["extra_info"])["extra_info"]
            held = sorted({EpisodeKind(i["env_id"], decode_kwargs(i["env_kwargs"])) for i in info})
        except Exception:  # noqa: BLE001 - an unreadable old dataset is rewritten as before
            return seen
        wanted = sorted({EpisodeKind.from_entry(e) for e in new["env"]})
        if held != wanted:
            seen["env"] = [kind.entry(1.0) for kind in held]
    return seen


def check_run_folder(cfg: DictConfig) -> None:
    """Refuse to resume a run folder that holds a run with other settings (see the module docstring)."""
    if str(cfg.trainer.resume_mode) == "disable":
        return
    checkpoint = _checkpoint_dir(cfg)
    if checkpoint is None:
        return  # nothing to resume: the folder's datasets and record are rewritten for this run
    new = run_identity(cfg)
    record = Path(str(cfg.turngym.output_dir)).expanduser() / RUN_RECORD
    try:
        old = json.loads(read_run_file(record) or "")
    except (OSError, ValueError):
        old = _recorded_from_folder(cfg, checkpoint, new)
    differences = _differences(old, new)
    if differences:
        raise ConfigError(
            f"{cfg.turngym.output_dir} holds a run with other settings ({'; '.join(differences)}); "
            f"resuming it would mix two runs: start one with {fresh_run_hint(cfg)}, or give a new "
            "turngym.output_dir=DIR, or trainer.resume_mode=disable to train from scratch there"
        )


def write_run_record(cfg: DictConfig, identity: dict[str, Any] | None = None) -> Path:
    """Record the run's identity in ``<output_dir>/run.json`` and its config beside it.

    A fresh start writes ``config.yaml``; a resume leaves it as the earlier steps used it and writes
    ``config.resumed-<step>.yaml`` instead (trainer/checks/resume_settings.py), unless it trains no step.

    ``identity``: ``run_identity`` as the command gave it (before trainer.run filled in the model).
    """
    out = Path(str(cfg.turngym.output_dir)).expanduser()
    out.mkdir(parents=True, exist_ok=True)
    record = out / RUN_RECORD
    write_run_file(record, json.dumps(identity or run_identity(cfg), indent=1, sort_keys=True) + "\n")
    step = resumed_step(cfg)
    if step is None:  # a fresh start: config.yaml is what its steps train with
        write_run_file(out / FIRST_CONFIG, config_yaml(cfg))
    elif step < int(cfg.trainer.total_training_steps):  # a resume that trains: config.yaml stays as it is
        changes = settings_since(cfg, step)
        written = write_resumed_config(cfg, step, changes)
        if changes:
            print(
                f"[turngym] resuming after step {step} with changed settings ({describe(changes)}): "
                f"{FIRST_CONFIG} keeps what the earlier steps used, {written.name} what the next ones use",
                flush=True,
            )
    return record


def resumed_step(cfg: DictConfig) -> int | None:
    """The step of the checkpoint verl will resume (``global_step_N``), or None when it resumes none."""
    folder = resume_checkpoint(cfg)
    if folder is None or not folder.is_dir():
        return None
    match = re.fullmatch(r"global_step_(\d+)", folder.name)
    return int(match.group(1)) if match else None


def check_run(cfg: DictConfig) -> None:
    """Checks of the model path and the run folder, before trainer.run writes anything. Raises ConfigError.

    The run record is written by trainer.run once the datasets have passed their checks too.
    """
    check_output_dirs(cfg)
    if cfg.turngym.model:
        check_model_dir(str(cfg.turngym.model))
    check_run_folder(cfg)
    check_resume_settings(cfg, resumed_step(cfg))  # a resume keeps the settings its steps used
    check_resume_checkpoint(cfg)
    from trainer.checks.env_server_check import check_env_servers

    check_env_servers(cfg)


def check_output_dirs(cfg: DictConfig) -> None:
    """The folders the run writes (``turngym.output_dir``, ``trainer.default_local_dir``) are folders,
    or can be made; ConfigError in one line before anything is written."""
    for key in ("turngym.output_dir", "trainer.default_local_dir"):
        value = OmegaConf.select(cfg, key, default=None, throw_on_resolution_failure=False)
        if value is None:
            continue
        folder = Path(str(value)).expanduser()
        if folder.exists() and not folder.is_dir():
            raise ConfigError(
                f"{key}={value} is a file; give a folder for the run (it is created if missing)"
            )
        try:
            check_output_file(folder / "run.json", key)
        except UsageError as exc:
            raise ConfigError(str(exc)) from None


# Folders of a verl checkpoint whose .pt files a resume loads (actor, critic; data.pt beside them).
_CHECKPOINT_PARTS = (".", "actor", "critic")


def resume_checkpoint(cfg: DictConfig) -> Path | None:
    """The checkpoint folder (``global_step_N``) verl's resume will load, or None when it loads none.

    ``trainer.resume_mode=resume_path``: ``trainer.resume_from_path``; ``auto``: the latest checkpoint of
    ``trainer.default_local_dir``; ``disable``: none.
    """
    mode = str(cfg.trainer.resume_mode)
    if mode == "disable":
        return None
    if mode == "resume_path":
        given = cfg.trainer.get("resume_from_path")
        return Path(str(given)).expanduser() if given else None
    return _checkpoint_dir(cfg)


def _weights_only_globals() -> list[Any]:
    """What a verl checkpoint holds besides tensors and plain containers: numpy's RNG state (extra_state)."""
    import numpy as np

    core = getattr(np, "_core", None) or np.core
    return [core.multiarray._reconstruct, np.ndarray, np.dtype, type(np.dtype(np.uint32))]


def _load_weights_only(path: Path) -> None:
    import torch
    import torch.distributed.tensor  # noqa: F401  (registers DTensor with the weights-only unpickler)

    with torch.serialization.safe_globals(_weights_only_globals()):
        try:
            # mmap: the tensors are mapped, not read, so an optimizer of gigabytes costs no memory.
            torch.load(path, map_location="cpu", weights_only=True, mmap=True)
        except RuntimeError as exc:  # (a refused pickle is an UnpicklingError, not caught here)
            if "mmap" not in str(exc):
                raise
            torch.load(path, map_location="cpu", weights_only=True)  # a file of torch's old format


def check_resume_checkpoint(cfg: DictConfig) -> None:
    """Refuse, in one line, a resume from a checkpoint whose ``.pt`` files are not loadable weights-only.

    Args:
        cfg: the composed training config (``trainer.resume_mode``, ``trainer.resume_from_path``,
            ``trainer.default_local_dir``; ``turngym.trust_checkpoint`` skips the check).

    Raises:
        ConfigError: a file holds more than tensors and plain data (loading it could run code it carries),
            or cannot be read as a checkpoint at all.
    """
    if cfg.turngym.get("trust_checkpoint", False):
        return
    folder = resume_checkpoint(cfg)
    if folder is None or not folder.is_dir():
        return
    files = sorted({p for part in _CHECKPOINT_PARTS for p in (folder / part).glob("*.pt")})
    if not files:
        return
    import logging
    import pickle

    from turngym.common.cli_errors import one_line

    # Unpickling a DeviceMesh outside a process group logs a warning about torch.compile: not ours.
    mesh_log = logging.getLogger("torch.distributed.device_mesh")
    level = mesh_log.level
    mesh_log.setLevel(logging.ERROR)
    try:
        for path in files:
            try:
                _load_weights_only(path)
            except pickle.UnpicklingError:
                raise ConfigError(
                    f"{path}: this checkpoint file holds more than tensors, and resuming would load it with "
                    "the full unpickler, which runs any code it carries; not resumed. If you trust where "
                    "this checkpoint came from, add +turngym.trust_checkpoint=true"
                ) from None
            except Exception as exc:  # noqa: BLE001 - a torn or foreign file: verl would fail on it later
                raise ConfigError(
                    f"{path}: cannot be read as a checkpoint ({one_line(exc)}); not resumed"
                ) from None
    finally:
        mesh_log.setLevel(level)
