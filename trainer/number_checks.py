"""Numbers on the command line, checked before anything is written or Ray starts: type, range, key named.

``data.train_batch_size=-4`` used to run the whole warm start before verl refused it in a traceback,
``actor_rollout_ref.actor.optim.lr=fast`` was a traceback, and ``trainer.total_training_steps=abc`` said
``invalid literal for int()`` without naming the key. Two checks cover every number turngym or verl reads:

- ``RANGES``: the keys whose meaning bounds them (counts, sizes, rates, probabilities), each with its kind
  (whole number or any number), bounds and whether null is allowed;
- every other key the command line sets whose default is a number must stay a number (verl and turngym
  read it with ``int()``/``float()`` or compare it), so a word there is refused as well.
"""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig, OmegaConf

from common.number_bounds import Bound, is_number
from trainer.config_error import ConfigError

COUNT = Bound(whole=True, low=1)
COUNT_OR_NULL = Bound(whole=True, low=1, nullable=True)
SEED = Bound(whole=True, low=0)
FREQUENCY = Bound(whole=True, low=-1)  # verl: <= 0 switches saving or validation off
RATE = Bound(whole=False, low=0)
POSITIVE = Bound(whole=False, low=0, open_low=True)
PROBABILITY = Bound(whole=False, low=0, high=1)
TOP_P = Bound(whole=False, low=0, high=1, open_low=True)

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
    f"{_ARR}.actor.optim.lr": RATE,
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
    f"{_ARR}.rollout.temperature": RATE,
    f"{_ARR}.rollout.top_p": TOP_P,
    f"{_ARR}.rollout.val_kwargs.temperature": RATE,
    f"{_ARR}.rollout.val_kwargs.top_p": TOP_P,
    f"{_ARR}.rollout.val_kwargs.n": COUNT,
    f"{_ARR}.rollout.log_prob_micro_batch_size_per_gpu": COUNT_OR_NULL,
    f"{_ARR}.rollout.gpu_memory_utilization": TOP_P,
    f"{_ARR}.rollout.multi_turn.max_assistant_turns": COUNT_OR_NULL,
    f"{_ARR}.rollout.multi_turn.max_user_turns": COUNT_OR_NULL,
    f"{_ARR}.ref.log_prob_micro_batch_size_per_gpu": COUNT_OR_NULL,
    "critic.optim.lr": RATE,
    "critic.ppo_mini_batch_size": COUNT,
    "critic.ppo_micro_batch_size_per_gpu": COUNT_OR_NULL,
    "critic.ppo_epochs": COUNT,
    "algorithm.gamma": PROBABILITY,
    "algorithm.lam": PROBABILITY,
    "algorithm.kl_ctrl.kl_coef": RATE,
    "turngym.max_tokens_per_turn": COUNT_OR_NULL,
    "turngym.dump_every": Bound(whole=True, low=0, nullable=True),
    "turngym.env_server_timeout_s": POSITIVE,
    "turngym.warm_start.episodes": COUNT,
    "turngym.warm_start.epochs": COUNT,
    "turngym.warm_start.lr": POSITIVE,
    "turngym.warm_start.batch_size": COUNT,
    "turngym.warm_start.seed": SEED,
    "turngym.warm_start.max_length": COUNT,
    "turngym.warm_start.expert_noise": PROBABILITY,
    "turngym.warm_start.expert_share": PROBABILITY,
}


def _value(cfg: DictConfig, key: str) -> Any:
    return OmegaConf.select(cfg, key, default=None, throw_on_resolution_failure=False)


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
        >>> from trainer.number_checks import check_numbers
        >>> cfg = OmegaConf.create({"data": {"train_batch_size": -4}})
        >>> check_numbers(cfg, cfg, {"data.train_batch_size"})
        Traceback (most recent call last):
        ...
        trainer.config_error.ConfigError: data.train_batch_size=-4 is out of range; give a whole number >= 1
    """
    ordered = sorted(user_keys) + [k for k in RANGES if k not in user_keys]
    for key in ordered:
        if key in RANGES:
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
