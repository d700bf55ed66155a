"""Compose turngym's Hydra config (verl's ppo_trainer + turngym defaults) and check it before Ray starts."""

from __future__ import annotations

import contextlib
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from rollout.episode_budgets import TRAINING_KEYS, default_budgets, run_turn_limit
from rollout.episode_kind import EpisodeKind
from trainer.checks.config_error import ConfigError
from trainer.checks.config_suggest import OPEN_KEY_PREFIXES, check_override_keys, config_keys
from trainer.checks.early_env_check import check_env_ids_early, unregistered_env_message
from trainer.checks.user_modules import import_user_modules

CONFIG_DIR = Path(__file__).resolve().parent / "config"
PRIMARY_CONFIG = "turngym"
GROUPS = ("env", "algorithm", "platform")


def group_choices(group: str) -> list[str]:
    """The options of one of turngym's config groups (file names under trainer/config/<group>/)."""
    return sorted(p.stem for p in (CONFIG_DIR / group).glob("*.yaml"))


def _split(override: str) -> tuple[str, str | None]:
    key, sep, value = override.partition("=")
    return key.lstrip("+~"), (value if sep else None)


def _normalize(overrides: list[str]) -> list[str]:
    """Apply turngym's shortcuts: ``model=PATH`` and ``env.id=ID`` (which implies ``env=single``)."""
    out: list[str] = []
    keys = {_split(o)[0] for o in overrides}
    for override in overrides:
        key, value = _split(override)
        if value is None:
            raise ConfigError(f"override {override!r} is not key=value")
        if key in ("model", "turngym.model") and value == "embedded":
            out.append("turngym.model=null")  # the embedded model by name: its own defaults apply
            continue
        if key == "model":
            out.append(f"turngym.model={value}")
            continue
        if key.startswith(OPEN_KEY_PREFIXES) and not override.startswith(("+", "~")):
            override = "+" + override  # free-form dicts: new keys need no '+' from the user
        if key in GROUPS and value not in group_choices(key):
            raise ConfigError(f"unknown {key} {value!r}; valid choices: {', '.join(group_choices(key))}")
        out.append(override)
    if "env.id" in keys and "env" not in keys:
        out.insert(0, "env=single")
    return out


def _compose(overrides: list[str]) -> DictConfig:
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.errors import HydraException

    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base=None):
            return compose(config_name=PRIMARY_CONFIG, overrides=overrides)
    except HydraException as exc:
        message = _unknown_key(overrides)
        if message:
            raise ConfigError(message) from None
        raise ConfigError(f"bad override: {' '.join(str(exc).split())}") from exc
    finally:
        GlobalHydra.instance().clear()


def _group_only(overrides: list[str]) -> list[str]:
    return [o for o in overrides if _split(o)[0] in GROUPS]


def _unknown_key(overrides: list[str], plus_only: bool = False) -> str | None:
    """A did-you-mean for the first override naming a key the config lacks (or a '+' typo), else None."""
    group_overrides = _group_only(overrides)
    if group_overrides == overrides:
        return None
    try:
        base = _compose(group_overrides)
    except ConfigError:
        return None
    return check_override_keys(overrides, config_keys(base), GROUPS, plus_only=plus_only)


def resolve_device(requested: str) -> str:
    """``auto`` becomes ``cuda`` when a GPU is visible, else ``cpu``; anything else is kept."""
    if requested != "auto":
        return requested
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def compose_config(overrides: list[str] | None = None) -> DictConfig:
    """The full training config for these command-line overrides, validated; raises ConfigError."""
    overrides = _normalize(list(overrides or []))
    check_env_ids_early(overrides)  # before composing, which imports verl, torch and Ray
    user_keys = {_split(o)[0] for o in overrides}
    if "platform" not in user_keys:
        # The platform's own keys (e.g. fsdp_config.mixed_precision on CPU) can then be overridden
        # like any other: composed without it, Hydra refuses them as unknown.
        requested = next((v for o in overrides for k, v in [_split(o)] if k == "trainer.device"), "auto")
        device = resolve_device(str(requested))
        overrides = [f"platform={'cpu' if device == 'cpu' else 'gpu'}", *overrides]
    first = _compose(overrides)
    if any(o.startswith("+") and not _split(o)[0].startswith(OPEN_KEY_PREFIXES) for o in overrides):
        message = _unknown_key(overrides, plus_only=True)  # '+key' composes even when it is a typo
        if message:
            raise ConfigError(message)
    device = resolve_device(str(first.trainer.device))
    final_overrides = list(overrides)
    if "trainer.device" not in user_keys:
        final_overrides.append(f"trainer.device={device}")
    preset = model_preset(first.turngym.model)
    preset_overrides = preset_file_overrides(preset, user_keys) if preset else []
    final_overrides = preset_overrides + final_overrides
    # A preset's budgets count as set: rollout's general defaults fill only what neither gives.
    preset_keys = {_split(o)[0] for o in preset_overrides}
    final_overrides = budget_overrides(first, user_keys | preset_keys) + final_overrides
    cfg = _compose(final_overrides)
    import_user_modules(list(cfg.turngym.import_modules))
    apply_compute_dtype(cfg, user_keys)
    if "turngym.warm_start.enable" not in user_keys and cfg.turngym.model and cfg.turngym.warm_start.enable:
        # The CPU platform's warm start is the embedded model's (its experts, lr and lengths are tuned for
        # it): another model gets it only when asked (on SmolLM2-135M it sent the loss from 1.6 to 19).
        cfg.turngym.warm_start.enable = False
    if "turngym.warm_start.enable" not in user_keys and cfg.turngym.warm_start.enable:
        # The CPU platform's default warm start imitates experts; with none to imitate it is left off
        # (asking for it explicitly is a ConfigError from check_warm_start).
        with contextlib.suppress(Exception):  # unknown ids are reported by check_config
            if envs_without_expert(cfg):
                cfg.turngym.warm_start.enable = False
    from trainer.checks.number_checks import check_numbers

    # Types come from the config without the command line's values: what verl and turngym read there.
    check_numbers(cfg, _compose(_group_only(overrides)), user_keys)
    try:
        check_config(cfg)
    except (ValueError, TypeError) as exc:
        if isinstance(exc, ConfigError):
            raise
        raise ConfigError(f"bad value: {exc}") from None
    return cfg


ACTOR_PARAM_DTYPE = "actor_rollout_ref.actor.fsdp_config.mixed_precision.param_dtype"
BYPASS_MODE = "algorithm.rollout_correction.bypass_mode"
# The CPU rollout engine's dtype (HFEngine loads fp32): in bypass mode its log-probs are the old policy's.
CPU_ROLLOUT_DTYPE = "fp32"


def apply_compute_dtype(cfg: DictConfig, user_keys: set[str]) -> None:
    """On a CPU, set the actor's compute dtype from ``turngym.compute_dtype`` (auto: what this CPU runs fast).

    In bypass mode the importance ratio compares the actor's log-probs with the fp32 rollout's, so a
    bf16 actor would put bf16 rounding into every ratio (round 5: 5-12x fp32's clip fraction at the
    first and only update of a step, and 0 of 4 bf16 runs met the criterion against 2 of 2 in fp32).
    ``auto`` therefore keeps the actor in fp32 there; the warm start, which has no ratio, still takes
    the measured choice (`warm_start_compute_dtype`). A forced ``bf16`` trains the actor in bf16 and
    turns bypass off, so verl recomputes the old log-probs with the actor (one forward pass per step),
    unless ``bypass_mode`` is on the command line too. A ``param_dtype`` on the command line wins; on a
    GPU verl's defaults stay.
    """
    from turngym.engines.compute_dtype import CHOICES, choose_compute_dtype

    requested = str(cfg.turngym.get("compute_dtype", "auto"))
    if requested not in CHOICES:
        raise ConfigError(f"turngym.compute_dtype={requested!r}: give one of {', '.join(CHOICES)}")
    if cfg.trainer.device != "cpu" or ACTOR_PARAM_DTYPE in user_keys:
        return
    dtype = choose_compute_dtype(requested).dtype
    if dtype != CPU_ROLLOUT_DTYPE and _bypass_mode(cfg):
        if requested == "auto":
            dtype = CPU_ROLLOUT_DTYPE
        elif BYPASS_MODE not in user_keys:
            cfg.algorithm.rollout_correction.bypass_mode = False
    cfg.actor_rollout_ref.actor.fsdp_config.mixed_precision.param_dtype = dtype


def _bypass_mode(cfg: DictConfig) -> bool:
    return bool(OmegaConf.select(cfg, BYPASS_MODE, default=False))


def warm_start_compute_dtype(cfg: DictConfig) -> str:
    """The warm start's compute dtype: ``turngym.compute_dtype``'s choice on a CPU (no ratio to keep exact)."""
    from turngym.engines.compute_dtype import choose_compute_dtype

    if cfg.trainer.device != "cpu":
        return "fp32"
    return choose_compute_dtype(str(cfg.turngym.get("compute_dtype", "auto"))).dtype


def compute_dtype_line(cfg: DictConfig) -> str | None:
    """The run's start line about its compute dtype (None on a GPU)."""
    from turngym.engines.compute_dtype import choose_compute_dtype

    if cfg.trainer.device != "cpu":
        return None
    actor = str(cfg.actor_rollout_ref.actor.fsdp_config.mixed_precision.param_dtype)
    requested = str(cfg.turngym.get("compute_dtype", "auto"))
    choice = choose_compute_dtype(requested)
    if actor == choice.dtype:
        line = choice.line()
    elif requested == "auto" and actor == CPU_ROLLOUT_DTYPE and _bypass_mode(cfg):
        line = (
            f"compute dtype {choice.dtype} for the warm start, fp32 for the actor: its log-probs are compared "
            f"with the fp32 rollout's (bypass_mode); measured on this CPU: {choice.rates.line()} "
            "(turngym.compute_dtype=bf16 trains the actor in bf16 and recomputes the old log-probs)"
        )
    else:
        return f"compute dtype {actor} ({ACTOR_PARAM_DTYPE}={actor} on the command line)"
    if actor != CPU_ROLLOUT_DTYPE and _bypass_mode(cfg):
        line += "; bypass_mode=true on the command line: every ratio carries the bf16 actor's rounding"
    elif actor != CPU_ROLLOUT_DTYPE:
        line += (
            "; old log-probs recomputed by the actor (bypass_mode off: the fp32 rollout's differ by rounding)"
        )
    return line


def check_config(cfg: DictConfig) -> None:
    """Checks that need more than Hydra: env ids registered, group consistency, algorithm sanity."""
    import envs

    known = {s.id for s in envs.list_envs()}
    entries = env_entries(cfg)
    if not entries:
        raise ConfigError("env.id is not set; use env=<group> or env.id=<registered id>")
    for entry in entries:
        if entry["id"] not in known:
            group = None if cfg.env.id else str(cfg.env.name)  # a single env.id has no group to name
            raise ConfigError(unregistered_env_message(entry["id"], known, group))
        if entry["weight"] <= 0:
            raise ConfigError(f"env {entry['id']!r} has weight {entry['weight']}; weights must be > 0")
    check_env_kwargs(cfg, entries)
    check_schedules(cfg, entries)
    if cfg.trainer.device not in ("cpu", "cuda", "npu"):
        raise ConfigError(f"trainer.device={cfg.trainer.device!r}; valid choices: auto, cpu, cuda, npu")
    if int(cfg.trainer.total_training_steps) < 1:
        raise ConfigError("trainer.total_training_steps must be >= 1")
    if cfg.turngym.get("keep_optimizer", "latest") not in ("latest", "all"):
        from turngym.common.cli_errors import did_you_mean

        hint = did_you_mean(str(cfg.turngym.keep_optimizer), ["latest", "all"])
        message = f"turngym.keep_optimizer={cfg.turngym.keep_optimizer!r}; valid choices: latest, all"
        raise ConfigError(f"{message}; {hint}" if hint else message)
    from trainer.checks.registry_checks import check_registry_values

    check_registry_values(cfg)
    from trainer.cluster.ray_cluster import given_address

    if given_address(cfg) is None:
        # With a cluster to join, trainer.run checks the node count against it first (a trainer.nnodes
        # the cluster lacks also breaks verl's batch-size divisibility) and then runs this check.
        check_verl_sizes(cfg)
    check_warm_start(cfg)


def check_schedules(cfg: DictConfig, entries: list[dict]) -> None:
    """Refuse bad ``turngym.mixture`` and ``turngym.curriculum.pass_rate`` settings before anything starts."""
    from trainer.hooks.curriculum.pass_rate import PassRateConfig
    from trainer.hooks.curriculum.schedule import CurriculumConfig
    from trainer.hooks.mixture.adaptive import MixtureConfig

    try:
        mixture = MixtureConfig.from_mapping(cfg.turngym.get("mixture"))
        if mixture.enable:
            mixture.check_envs(len(entries))
        curriculum = CurriculumConfig.from_mapping(cfg.turngym.get("curriculum"))
        PassRateConfig.from_mapping(curriculum.pass_rate)
    except (TypeError, ValueError) as exc:
        raise ConfigError(str(exc)) from exc


def check_verl_sizes(cfg: DictConfig, with_critic: bool = False) -> None:
    """verl's own check of batch sizes against each other (``validate_config``), run before anything is
    written rather than after the warm start; its refusal becomes one ConfigError line.

    Args:
        cfg: the composed training config.
        with_critic: also check the critic's sizes; verl then loads the model's config, so trainer.run
            asks for it once the model directory exists (the embedded model is built in stage_run).
    """
    import copy
    import io
    import warnings

    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config

    from turngym.common.cli_errors import one_line

    try:
        # Its "all checks passed" and need_critic's "Disabled critic" warning belong to the real launch.
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            validate_config(
                config=copy.deepcopy(cfg),
                use_reference_policy=need_reference_policy(cfg),
                use_critic=with_critic and need_critic(cfg),
            )
    except (AssertionError, ValueError, TypeError) as exc:
        raise ConfigError(f"verl's config check refuses it: {one_line(exc)}") from None


def check_env_kwargs(cfg: DictConfig, entries: list[dict]) -> None:
    """Every env of the mixture can be built with its kwargs (``env.kwargs.*`` included); ConfigError in
    one line naming the env, the kwargs and, for a group, how to give kwargs to one env alone."""
    from turngym.common.cli_errors import one_line

    given = OmegaConf.to_container(cfg.env.kwargs) or {}
    for entry in entries:
        kind = EpisodeKind.from_entry(entry)
        try:
            kind.make().close()
        except Exception as exc:  # noqa: BLE001 - any constructor error is the user's setting, in one line
            where = (
                "" if cfg.env.id else f" (group {cfg.env.name}; env.kwargs.* apply to every env of a group)"
            )
            alone = (
                f"; for one env alone use env.id={kind.env_id} env.kwargs.<key>=<value>"
                if given and not cfg.env.id
                else ""
            )
            raise ConfigError(
                f"env {kind.env_id}{where} cannot be built with kwargs {kind.kwargs_json}: "
                f"{one_line(exc)}{alone}"
            ) from None


WARM_START_ENGINES = ("auto", "verl", "torch")


def warm_start_engine(cfg: DictConfig) -> str:
    """The warm start's engine: turngym.warm_start.engine, with auto resolved from the device."""
    engine = str(cfg.turngym.warm_start.get("engine", "auto"))
    if engine not in WARM_START_ENGINES:
        raise ConfigError(
            f"turngym.warm_start.engine={engine!r}: choose one of {', '.join(WARM_START_ENGINES)}"
        )
    if engine == "auto":
        return "torch" if str(cfg.trainer.device) == "cpu" else "verl"
    return engine


def check_warm_start(cfg: DictConfig) -> None:
    """The warm start's sizes and its overrides of verl's SFT config, checked before any work."""
    ws = cfg.turngym.warm_start
    if not ws.enable:
        return
    without_expert = envs_without_expert(cfg)
    if without_expert:
        verb = "has" if len(without_expert) == 1 else "have"
        raise ConfigError(
            f"turngym.warm_start imitates scripted experts, and {', '.join(without_expert)} {verb} none "
            "(TextArena's games have none); drop turngym.warm_start.enable=true"
        )
    from trainer.warm_start.expert_demos import demonstrator_problem
    from trainer.warm_start.runner import sft_config

    problem = demonstrator_problem(float(ws.expert_noise), float(ws.expert_share), str(ws.other_player))
    if problem:
        raise ConfigError(problem)
    if int(ws.batch_size) < 1 or int(ws.episodes) < int(ws.batch_size):
        raise ConfigError(
            f"turngym.warm_start.episodes ({ws.episodes}) must be at least "
            f"turngym.warm_start.batch_size ({ws.batch_size}), which must be >= 1"
        )
    engine = warm_start_engine(cfg)
    if engine == "torch":
        if list(ws.overrides):
            raise ConfigError(
                "turngym.warm_start.overrides are keys of verl's SFT trainer, which engine=torch does not "
                "run; drop them or set turngym.warm_start.engine=verl"
            )
        return
    sft_config(
        "model",
        Path("demos.parquet"),
        Path("warm_start"),
        str(cfg.trainer.device),
        int(ws.epochs),
        float(ws.lr),
        int(ws.batch_size),
        int(ws.seed),
        int(ws.max_length),
        list(ws.overrides),
    )


def env_entries(cfg: DictConfig) -> list[dict]:
    """The episode mixture: ``[{id, weight, kwargs}]`` from env.id or the group's mixture.

    ``env.kwargs.*`` apply to every env of the mixture, over the group file's own kwargs for it (as they
    apply to every row of a user's own dataset); ``check_env_kwargs`` refuses a mixture member that
    cannot be built with them. ``env.difficulty`` is added to the kwargs of every env that has
    difficulty levels (games), unless the entry sets its own.
    """
    operator = OmegaConf.to_container(cfg.env.kwargs) or {}
    if cfg.env.id:
        entries = [{"id": str(cfg.env.id), "weight": 1.0, "kwargs": dict(operator)}]
    else:
        entries = [
            {
                "id": str(e.id),
                "weight": float(e.get("weight", 1.0)),
                "kwargs": {**(OmegaConf.to_container(e.get("kwargs", {})) or {}), **operator},
            }
            for e in cfg.env.mixture
        ]
    difficulty = cfg.env.get("difficulty")
    if difficulty:
        for entry in entries:
            if "difficulty" not in entry["kwargs"] and _has_difficulties(entry["id"]):
                entry["kwargs"]["difficulty"] = str(difficulty)
    return entries


def envs_without_expert(cfg: DictConfig) -> list[str]:
    """The mixture's env ids that have no scripted expert (so no warm start demonstrations)."""
    return sorted({e["id"] for e in env_entries(cfg) if not _has_expert(e["id"])})


def turn_limit_notes(cfg: DictConfig, entries: list[dict] | None = None) -> list[str]:
    """One line per kind of episode whose env ends it in fewer turns than the run's limit.

    The run's limit (`rollout.episode_budgets.run_turn_limit`) caps every episode; an env's own
    ``max_turns`` (its kwargs', else its spec's) is a rule of its game and ends an episode first when
    it is lower. `trainer.run` prints these lines so that such an episode's length is not a surprise.

    Args:
        cfg: the composed training config.
        entries: the env mixture (`env_entries(cfg)` when None).

    Returns:
        The lines, e.g. ``"guess-number-v0 {"max_turns": 2} ends its episodes after 2 turns, under the
        run's limit of 5 (actor_rollout_ref.rollout.multi_turn.max_assistant_turns)"``; none when no env
        stops short of the limit.
    """
    import envs

    limit = run_turn_limit(cfg)
    notes = []
    for kind in sorted(
        {EpisodeKind.from_entry(e) for e in (env_entries(cfg) if entries is None else entries)}
    ):
        own = kind.kwargs.get("max_turns", envs.spec(kind.env_id).max_turns)
        if own is not None and int(own) < limit:
            notes.append(
                f"{kind.key} ends its episodes after {int(own)} turns, under the run's limit of {limit} "
                f"({TRAINING_KEYS['max_turns']})"
            )
    return notes


def _has_expert(env_id: str) -> bool:
    """Whether the env's class overrides `TextEnv.expert_action` (factories are given the benefit of the doubt)."""
    import envs

    made_by = envs.spec(env_id).load()
    if not (isinstance(made_by, type) and issubclass(made_by, envs.TextEnv)):
        return True
    return made_by.expert_action is not envs.TextEnv.expert_action


def _has_difficulties(env_id: str) -> bool:
    import envs

    try:
        return bool(getattr(envs.spec(env_id).load(), "difficulties", None))
    except Exception:  # noqa: BLE001 - unknown ids are reported by check_config
        return False


def budget_overrides(cfg: DictConfig, user_keys: set[str]) -> list[str]:
    """rollout's default episode budgets for the budget keys that neither the user nor a group file set."""
    budgets = default_budgets(embedded=not cfg.turngym.model, model=cfg.turngym.model)
    out = []
    for field, key in TRAINING_KEYS.items():
        # null in turngym.yaml means "not set"; a user's explicit null (one turn may use the whole budget) stays.
        if key not in user_keys and OmegaConf.select(cfg, key, default=None) is None:
            value = getattr(budgets, field)
            out.append(f"{key}={'null' if value is None else value}")
    return out


def model_preset(model: str | None) -> Path | None:
    """The defaults file of a model: embedded_model.yaml without one, config/model/<name>.yaml for a named one."""
    if not model:
        return CONFIG_DIR / "embedded_model.yaml"
    named = CONFIG_DIR / "model" / f"{model}.yaml"
    return named if "/" not in str(model) and named.is_file() else None


def preset_file_overrides(path: Path, user_keys: set[str]) -> list[str]:
    """Overrides for every key of a model's defaults file that the user did not set.

    Args:
        path: a YAML file of config values (nested like the training config).
        user_keys: the keys the command line sets; those keep the user's values.

    Returns:
        ``key=value`` overrides, one per leaf of the file not in ``user_keys``.
    """
    values = OmegaConf.to_container(OmegaConf.load(path))
    flat: list[str] = []

    def walk(prefix: str, node) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                walk(f"{prefix}.{key}" if prefix else key, value)
        elif prefix not in user_keys:
            flat.append(f"{prefix}={node}")

    walk("", values)
    return flat
