"""Names the config looks up in verl's registries (estimators, policy losses, reward managers, sampler)
and in turngym's health guards.

Its own module, apart from ``trainer.checks.run_checks`` (which imports ``trainer.compose``), so that
``compose_config`` can run these checks without an import cycle.
"""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from trainer.checks.config_error import ConfigError


def _names(registry: dict) -> str:
    return ", ".join(sorted(registry))


def check_registry_values(cfg: DictConfig) -> None:
    """Trainer mode, advantage estimator, policy loss and reward manager names exist in verl's registries.

    Runs after ``turngym.import_modules`` are imported; turngym's own estimators are registered here by
    `register_estimators` (trainer/estimators/registry.py), as the trainer does when it is built.
    """
    import importlib

    from verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY, POLICY_LOSS_REGISTRY

    from trainer.estimators import positive_grpo
    from trainer.estimators.registry import register_estimators

    register_estimators()

    mode = OmegaConf.select(cfg, "trainer.v1.trainer_mode", default="sync")
    if mode != "sync":
        raise ConfigError(
            f"trainer.v1.trainer_mode={mode!r}: turngym's trainer (progress, metrics, curriculum, turn credit) "
            "extends verl's synchronous trainer; leave it at 'sync'"
        )
    estimator = str(cfg.algorithm.adv_estimator)
    if estimator not in ADV_ESTIMATOR_REGISTRY:
        raise ConfigError(
            f"algorithm.adv_estimator={estimator!r} is not registered in verl; registered: "
            f"{_names(ADV_ESTIMATOR_REGISTRY)} (register yours with verl's register_adv_est in a module "
            "listed in turngym.import_modules)"
        )
    if estimator == positive_grpo.POSITIVE_GRPO:
        key = positive_grpo.NEGATIVE_SCALE_KEY
        scale = OmegaConf.select(cfg, f"algorithm.{key}", default=0.0)
        if not positive_grpo.is_negative_scale(scale):
            raise ConfigError(
                f"algorithm.{key}={scale!r}: give a number from 0 (negative advantages dropped) to 1 (GRPO)"
            )
    loss = str(cfg.actor_rollout_ref.actor.policy_loss.loss_mode)
    if loss not in POLICY_LOSS_REGISTRY:
        raise ConfigError(
            f"actor_rollout_ref.actor.policy_loss.loss_mode={loss!r} is not registered in verl; registered: "
            f"{_names(POLICY_LOSS_REGISTRY)} (register yours with verl's register_policy_loss in a module "
            "listed in turngym.import_modules)"
        )
    manager = cfg.reward.get("reward_manager") if cfg.get("reward") is not None else None
    if manager is not None and manager.get("source", "register") == "register" and manager.get("name"):
        importlib.import_module("verl.experimental.reward_loop.reward_manager")
        from verl.experimental.reward_loop.reward_manager.registry import REWARD_MANAGER

        if str(manager.name) not in REWARD_MANAGER:
            raise ConfigError(
                f"reward.reward_manager.name={manager.name!r} is not registered in verl; registered: "
                f"{_names(REWARD_MANAGER)}"
            )
    check_sampler(cfg)
    check_health(cfg)


def check_health(cfg: DictConfig) -> None:
    """``turngym.health``'s halt_on names and thresholds are ones the health guards know (trainer/hooks/health/guards.py)."""
    from trainer.hooks.health.guards import HealthGuard

    health = OmegaConf.select(cfg, "turngym.health", default=None)
    HealthGuard.from_config(OmegaConf.to_container(health, resolve=True) if health is not None else None)


def check_sampler(cfg: DictConfig) -> None:
    """verl v1's custom sampler ``trainer.v1.sampler.custom_sampler.{path,name}`` must import, if set."""
    sampler = OmegaConf.select(cfg, "trainer.v1.sampler.custom_sampler", default=None)
    if not sampler or not sampler.get("path"):
        return
    import importlib
    import importlib.util

    path, name = str(sampler.path), str(sampler.get("name") or "")
    try:
        if path.endswith(".py"):
            spec = importlib.util.spec_from_file_location("custom_sampler", path)
            if spec is None or not Path(path).exists():
                raise ImportError(f"no file {path}")
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        else:
            module = importlib.import_module(path)
    except Exception as exc:  # noqa: BLE001 - any failure to load is the user's to fix, in one line
        raise ConfigError(
            f"trainer.v1.sampler.custom_sampler.path={path!r} cannot be loaded: {exc}"
        ) from None
    if name and not hasattr(module, name):
        raise ConfigError(f"trainer.v1.sampler.custom_sampler.name={name!r}: {path} has no such attribute")
