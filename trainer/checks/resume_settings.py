"""A resume trains on with the settings the earlier steps used, unless the user opts in to a change.

``config.yaml`` in a run folder is the config the run's first steps trained with; it is written once, when
a run starts afresh, and never by a resume. Before Ray starts, a resume compares the config in effect at
the checkpoint it resumes (``config.yaml``, or the latest ``config.resumed-<step>.yaml`` at or before that
step) with the command's, key by key. Keys that may differ between the commands of one run are left out
(``IGNORED``: the step count, where files go, logging, checkpoint and validation cadence, how to resume,
where the run executes, the warm start a resume skips), and so are the values turngym fills in before Ray
(``FILLED_IN``: the model's and datasets' paths, which run.json compares by identity, and numbers fitted
from ``auto``). Any other difference refuses the resume in one line naming each key with its old and new
value; ``turngym.resume_changed=true`` accepts it. Every resume that trains records the config it runs
with in ``config.resumed-<step>.yaml`` (its first lines say what changed), so each step's settings stay
on disk: steps 1..N in ``config.yaml``, steps after N in ``config.resumed-N.yaml``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from trainer.checks.config_error import ConfigError
from trainer.run_folder.files import read_run_file, write_run_file

FIRST_CONFIG = "config.yaml"
_RESUMED = re.compile(r"^config\.resumed-(\d+)\.yaml$")
# Keys (or key prefixes, ending in '.') one run's commands may change: they decide how long it trains,
# where its files go and what it logs, not what a step does.
IGNORED = (
    "trainer.total_training_steps",  # extending a run is what a resume is for
    "trainer.total_epochs",  # another bound on the step count
    "turngym.output_dir",
    "turngym.run_name",
    "turngym.metrics_file",
    "turngym.plot_file",
    "trainer.default_local_dir",
    "trainer.default_hdfs_dir",
    "trainer.rollout_data_dir",
    "trainer.validation_data_dir",
    "global_profiler.",
    "turngym.verbose",
    "turngym.dump_every",
    "trainer.logger",
    "trainer.project_name",
    "trainer.experiment_name",
    "trainer.log_val_generations",
    "trainer.save_freq",
    "trainer.test_freq",
    "trainer.val_before_train",
    "trainer.max_actor_ckpt_to_keep",
    "trainer.max_critic_ckpt_to_keep",
    "trainer.del_local_ckpt_after_load",
    "turngym.keep_optimizer",
    "trainer.resume_mode",
    "trainer.resume_from_path",
    "turngym.trust_checkpoint",
    "turngym.resume_changed",
    "ray_kwargs.",  # where the run executes: its own Ray instance or a cluster, workers' environment
    "trainer.ray_wait_register_center_timeout",
    "turngym.env_servers",  # a served env plays exactly like the local one
    "turngym.env_server_timeout_s",
    "turngym.warm_start.",  # a resume skips the warm start
)
# Values turngym fills in before Ray (the model's cached directory, the datasets copied into the run
# folder, the agent loop's registration); run.json compares the model and the rows themselves.
FILLED_IN = (
    "turngym.model",
    "actor_rollout_ref.model.path",
    "critic.model.path",
    "actor_rollout_ref.rollout.prometheus.served_model_name",
    "actor_rollout_ref.rollout.agent.agent_loop_config_path",
    "data.train_files",
    "data.val_files",
)
_ABSENT = "<unset>"


def _skipped(key: str) -> bool:
    return any(key == k or (k.endswith(".") and key.startswith(k)) for k in IGNORED + FILLED_IN)


def _flat(node: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for key, value in node.items():
            out.update(_flat(value, f"{prefix}{key}."))
        return out
    return {prefix[:-1]: node}


def _settings(cfg: DictConfig) -> dict[str, Any]:
    try:
        container = OmegaConf.to_container(cfg, resolve=True)
    except Exception:  # noqa: BLE001 - a key only the workers can resolve: compare it as written
        container = OmegaConf.to_container(cfg, resolve=False)
    return _flat(container)


def changed_settings(old: dict[str, Any], new: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """The keys whose values differ between two flattened configs, as (key, old, new), in key order.

    Keys in ``IGNORED`` and ``FILLED_IN`` are left out, and so is a key the new config leaves at ``auto``
    where the old holds the number it was fitted to.
    """
    changes = []
    for key in sorted(set(old) | set(new)):
        before, after = old.get(key, _ABSENT), new.get(key, _ABSENT)
        if before == after or _skipped(key):
            continue
        if after == "auto" and isinstance(before, int | float):
            continue  # fitted from the same rows again
        changes.append((key, before, after))
    return changes


def _config_in_effect(out: Path, step: int) -> Path | None:
    """The config the steps just before ``step`` (inclusive) trained with, or None for a folder without one."""
    resumed = []
    if out.is_dir():
        for path in out.iterdir():
            match = _RESUMED.match(path.name)
            if match and int(match.group(1)) <= step:
                resumed.append((int(match.group(1)), path))
    if resumed:
        return max(resumed)[1]
    first = out / FIRST_CONFIG
    return first if first.exists() or first.is_symlink() else None


def _shown(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, default=str)  # lists and mappings on one line; None as null, as YAML writes it


def describe(changes: list[tuple[str, Any, Any]]) -> str:
    """``key old -> new; ...`` for a message or a file header."""
    return "; ".join(f"{key} {_shown(before)} -> {_shown(after)}" for key, before, after in changes)


def resumed_config_name(step: int) -> str:
    """The file that records what the steps after ``step`` train with: ``config.resumed-<step>.yaml``."""
    return f"config.resumed-{step}.yaml"


def settings_since(cfg: DictConfig, step: int) -> list[tuple[str, Any, Any]]:
    """What ``cfg`` changes from the config the run's steps up to ``step`` trained with, as (key, old, new).

    Args:
        cfg: the command's config.
        step: the checkpoint's step a resume starts after.

    Returns:
        The changed settings (``changed_settings``); empty for a folder without a recorded config.

    Raises:
        ConfigError: the recorded config is not YAML (hand-edited or torn).
    """
    out = Path(str(cfg.turngym.output_dir)).expanduser()
    path = _config_in_effect(out, step)
    if path is None:
        return []  # a folder from before config.yaml was kept: nothing to compare with
    try:
        old = _flat(OmegaConf.to_container(OmegaConf.create(read_run_file(path) or "{}"), resolve=False))
    except Exception as exc:  # noqa: BLE001 - the user must decide what the steps used
        raise ConfigError(
            f"{path}: cannot be read as YAML ({type(exc).__name__}), so this resume cannot be compared with "
            "the settings its steps used; restore the file, or train into a new turngym.output_dir=DIR"
        ) from None
    _keep_measured_dtype(cfg, old)
    return changed_settings(old, _settings(cfg))


def _keep_measured_dtype(cfg: DictConfig, old: dict[str, Any]) -> None:
    """Under ``turngym.compute_dtype=auto``, a resume computes in the dtype its steps used.

    ``auto`` is a measurement (trainer/compose.py): taken again on a loaded machine it can land on the
    other side of the threshold, and the user changed nothing.
    """
    from trainer.compose import ACTOR_PARAM_DTYPE

    before = old.get(ACTOR_PARAM_DTYPE)
    if str(cfg.turngym.get("compute_dtype", "auto")) != "auto" or before not in ("fp32", "bf16"):
        return
    if OmegaConf.select(cfg, ACTOR_PARAM_DTYPE) != before:
        OmegaConf.update(cfg, ACTOR_PARAM_DTYPE, before)


def check_resume_settings(cfg: DictConfig, step: int | None) -> list[tuple[str, Any, Any]]:
    """Refuse a resume whose settings differ from the ones the resumed steps used, unless opted in.

    Args:
        cfg: the command's composed config (before turngym fills in paths).
        step: the checkpoint's step the resume starts after; None when nothing is resumed.

    Returns:
        The changed settings, as (key, old, new): empty unless ``turngym.resume_changed=true`` accepted them.

    Raises:
        ConfigError: a setting differs and ``turngym.resume_changed`` is not true; the one line names every
            changed key with its old and new value, and the ways on.

    """
    if step is None:
        return []
    changes = settings_since(cfg, step)
    if changes and not cfg.turngym.get("resume_changed", False):
        where = _config_in_effect(Path(str(cfg.turngym.output_dir)).expanduser(), step)
        raise ConfigError(
            f"{cfg.turngym.output_dir} was trained up to step {step} with other settings "
            f"({describe(changes)}; recorded in {where.name if where else FIRST_CONFIG}); a resume may only "
            "change trainer.total_training_steps: to train with the new settings give a new "
            "turngym.output_dir=DIR (or turngym.run_name=NAME), or add turngym.resume_changed=true to resume "
            f"this run with them (recorded in {resumed_config_name(step)})"
        )
    return changes


def write_resumed_config(cfg: DictConfig, step: int, changes: list[tuple[str, Any, Any]]) -> Path:
    """Record the config a resume after ``step`` trains with, in ``config.resumed-<step>.yaml``.

    ``config.yaml`` (what the first steps used) is never rewritten by a resume.

    Args:
        cfg: the config verl gets.
        step: the checkpoint's step the resume starts after.
        changes: the settings turngym.resume_changed accepted (from ``check_resume_settings``).

    Returns:
        The file written.
    """
    path = Path(str(cfg.turngym.output_dir)).expanduser() / resumed_config_name(step)
    header = f"# steps after {step} (resumed); changed settings: {describe(changes) if changes else 'none'}\n"
    write_run_file(path, header + config_yaml(cfg))
    return path


def config_yaml(cfg: DictConfig) -> str:
    """The config as YAML, interpolations resolved where this process can resolve them."""
    try:
        return OmegaConf.to_yaml(cfg, resolve=True)
    except Exception:  # noqa: BLE001 - a key only the workers can resolve; keep the interpolations
        return OmegaConf.to_yaml(cfg)
