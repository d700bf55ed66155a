"""Numbers on the command line, checked before anything is written or Ray starts: type, range, key named.

``data.train_batch_size=-4`` used to run the whole warm start before verl refused it in a traceback,
``actor_rollout_ref.actor.optim.lr=fast`` was a traceback, and ``trainer.total_training_steps=abc`` said
``invalid literal for int()`` without naming the key. Two checks cover every number turngym or verl reads:

- ``RANGES``: the keys whose meaning bounds them (counts, sizes, rates, probabilities), each with its kind
  (whole number or any number), bounds and whether null is allowed;
- every other key the command line sets whose default is a number must stay a number (verl and turngym
  read it with ``int()``/``float()`` or compare it), so a word there is refused as well;
- no number the command line sets is NaN or infinite, inside a list or a mapping too
  (``turngym.curriculum.level_weights.easy=[nan,0,0]`` and ``env.kwargs.ruled_out_penalty=inf`` passed).

Bounds shared with another layer are that layer's: a sampling temperature is what the model server
accepts (``turngym.engines.engine.SAMPLING_BOUNDS``), the success threshold a reward an env may pay
(``envs.core.number_bounds.ENV_NUMBERS``).
"""

from __future__ import annotations

import math
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf

from envs.core.number_bounds import ENV_NUMBERS
from trainer.checks.config_error import ConfigError
from turngym.common.number_bounds import Bound, is_number, shown_value
from turngym.engines.engine import SAMPLING_BOUNDS

COUNT = Bound(whole=True, low=1)
COUNT_OR_NULL = Bound(whole=True, low=1, nullable=True)
SEED = Bound(whole=True, low=0)
FREQUENCY = Bound(whole=True, low=-1)  # verl: <= 0 switches saving or validation off
RATE = Bound(whole=False, low=0)
POSITIVE = Bound(whole=False, low=0, open_low=True)
PROBABILITY = Bound(whole=False, low=0, high=1)
TOP_P = Bound(whole=False, low=0, high=1, open_low=True)
# A learning rate past 1 is a typo (1e308 was taken and the first step's weights were inf).
LEARNING_RATE = Bound(whole=False, low=0, high=1)
TEMPERATURE = SAMPLING_BOUNDS["temperature"]  # 0 (greedy) or [0.01, 100]: 1e308 was taken
# A difficulty's sampling weight: relative, so any finite size works; NaN made every draw the same level.
LEVEL_WEIGHT = Bound(whole=False, low=0, high=1e6)

_ARR = "actor_rollout_ref"
RANGES: dict[str, Bound] = {
    "data.train_batch_size": COUNT,
    "data.val_batch_size": COUNT_OR_NULL,
    "data.max_prompt_length": Bound(whole=True, low=1, words=("auto",)),
    "data.max_response_length": COUNT,
    "env.train_episodes": COUNT,
    "env.val_episodes": COUNT,
    "env.seed_base": SEED,
    "env.val_seed_base": SEED,
    "trainer.total_training_steps": COUNT,
    "trainer.total_epochs": COUNT,
    "trainer.save_freq": FREQUENCY,
    "trainer.test_freq": FREQUENCY,
    "trainer.n_gpus_per_node": COUNT,
    "trainer.nnodes": COUNT,
    f"{_ARR}.actor.optim.lr": LEARNING_RATE,
    f"{_ARR}.actor.optim.weight_decay": RATE,
    f"{_ARR}.actor.optim.lr_warmup_steps_ratio": PROBABILITY,
    f"{_ARR}.actor.optim.clip_grad": POSITIVE,
    f"{_ARR}.actor.ppo_mini_batch_size": COUNT,
    f"{_ARR}.actor.ppo_micro_batch_size_per_gpu": COUNT_OR_NULL,
    f"{_ARR}.actor.ppo_epochs": COUNT,
    f"{_ARR}.actor.clip_ratio": POSITIVE,
    f"{_ARR}.actor.clip_ratio_low": RATE,
    f"{_ARR}.actor.clip_ratio_high": RATE,
    f"{_ARR}.actor.kl_loss_coef": RATE,
    f"{_ARR}.rollout.n": COUNT,
    f"{_ARR}.rollout.temperature": TEMPERATURE,
    f"{_ARR}.rollout.top_p": TOP_P,
    f"{_ARR}.rollout.val_kwargs.temperature": TEMPERATURE,
    f"{_ARR}.rollout.val_kwargs.top_p": TOP_P,
    f"{_ARR}.rollout.val_kwargs.n": COUNT,
    f"{_ARR}.rollout.log_prob_micro_batch_size_per_gpu": COUNT_OR_NULL,
    f"{_ARR}.rollout.gpu_memory_utilization": TOP_P,
    f"{_ARR}.rollout.multi_turn.max_assistant_turns": COUNT_OR_NULL,
    f"{_ARR}.rollout.multi_turn.max_user_turns": COUNT_OR_NULL,
    f"{_ARR}.ref.log_prob_micro_batch_size_per_gpu": COUNT_OR_NULL,
    "critic.optim.lr": LEARNING_RATE,
    "critic.ppo_mini_batch_size": COUNT,
    "critic.ppo_micro_batch_size_per_gpu": COUNT_OR_NULL,
    "critic.ppo_epochs": COUNT,
    "algorithm.gamma": PROBABILITY,
    "algorithm.lam": PROBABILITY,
    "algorithm.kl_ctrl.kl_coef": RATE,
    "turngym.max_tokens_per_turn": COUNT_OR_NULL,
    "turngym.dump_every": Bound(whole=True, low=0, nullable=True),
    "turngym.env_server_timeout_s": POSITIVE,
    "turngym.success_threshold": ENV_NUMBERS["reward"],  # compared with an episode's reward: nan never is
    "turngym.warm_start.episodes": COUNT,
    "turngym.warm_start.epochs": COUNT,
    "turngym.warm_start.lr": Bound(whole=False, low=0, high=1, open_low=True),
    "turngym.warm_start.batch_size": COUNT,
    "turngym.warm_start.seed": SEED,
    "turngym.warm_start.max_length": COUNT,
    "turngym.warm_start.expert_noise": PROBABILITY,
    "turngym.warm_start.expert_share": PROBABILITY,
}
#: Keys holding a list of numbers, each element within the bound.
LIST_RANGES: dict[str, Bound] = {
    f"turngym.curriculum.level_weights.{level}": LEVEL_WEIGHT for level in ("easy", "medium", "hard")
}


def _value(cfg: DictConfig, key: str) -> Any:
    return OmegaConf.select(cfg, key, default=None, throw_on_resolution_failure=False)


def _plain(value: Any) -> Any:
    if isinstance(value, DictConfig | ListConfig):
        try:
            return OmegaConf.to_container(value, resolve=True)
        except Exception:  # noqa: BLE001 - a key only the workers resolve: read it as written
            return OmegaConf.to_container(value, resolve=False)
    return value


def _nonfinite(key: str, value: Any) -> str | None:
    """The first NaN or infinity in `value` (a number, or lists and mappings of them), named by its path."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"{key}={value} is not a finite number; give a finite number"
    if isinstance(value, list | tuple):
        for i, item in enumerate(value):
            problem = _nonfinite(f"{key}[{i}]", item)
            if problem:
                return problem
    if isinstance(value, dict):
        for name, item in value.items():
            problem = _nonfinite(f"{key}.{name}", item)
            if problem:
                return problem
    return None


def _list_problem(key: str, value: Any, bound: Bound) -> str | None:
    if value is None:
        return None
    if not isinstance(value, list):
        return f"{key}={shown_value(value)} is not a list; give a list of {bound.describe()}s"
    for i, item in enumerate(value):
        problem = bound.problem(f"{key}[{i}]", item)
        if problem:
            return problem
    return None


def check_numbers(cfg: DictConfig, defaults: DictConfig, user_keys: set[str]) -> None:
    """Refuse, in one line naming the key, a number of the wrong type or out of range.

    Args:
        cfg: the composed training config.
        defaults: the same config composed without the command line's values (their types are the
            ones verl and turngym read).
        user_keys: the keys the command line sets; checked first, so the message names the key the
            user wrote, not one that interpolates it.

    Raises:
        ConfigError: the first problem found.

    Example:
        >>> from omegaconf import OmegaConf
        >>> from trainer.checks.number_checks import check_numbers
        >>> cfg = OmegaConf.create({"data": {"train_batch_size": -4}})
        >>> check_numbers(cfg, cfg, {"data.train_batch_size"})
        Traceback (most recent call last):
        ...
        trainer.checks.config_error.ConfigError: data.train_batch_size=-4 is out of range; give a whole number >= 1
    """
    ranged = [*RANGES, *LIST_RANGES]
    ordered = sorted(user_keys) + [k for k in ranged if k not in user_keys]
    for key in ordered:
        problem = _nonfinite(key, _plain(_value(cfg, key))) if key in user_keys else None
        if problem:
            raise ConfigError(problem)
        if key in LIST_RANGES:
            problem = _list_problem(key, _plain(_value(cfg, key)), LIST_RANGES[key])
        elif key in RANGES:
            if (
                OmegaConf.select(cfg, key, default="<absent>", throw_on_resolution_failure=False)
                == "<absent>"
            ):
                continue
            problem = RANGES[key].problem(key, _value(cfg, key))
        else:
            default = _value(defaults, key)
            value = _value(cfg, key)
            problem = None
            if is_number(default) and value is not None and not is_number(value):
                shown = f"{key}={value!r}" if isinstance(value, str) else f"{key}={value}"
                problem = f"{shown} is not a number; give a number like its default {default}"
        if problem:
            raise ConfigError(problem)
