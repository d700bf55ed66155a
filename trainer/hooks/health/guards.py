"""Guards on the step's health metrics (trainer/hooks/health/metrics.py): a threshold per metric under
``turngym.health.<metric>``, one warning line when a metric crosses it, and a halt for the metrics
listed in ``turngym.health.halt_on``.

A metric warns on the step it crosses its threshold and stays quiet while it stays across, so a
long run does not drown its progress lines; it warns again only after it came back and crossed
anew. A metric that is NaN or infinite counts as crossed. ``null`` turns a metric's guard off (the
metric is still reported).

Collapse is different: flat groups (``groups_all_equal``) or a collapsed entropy leave every later
step training on nothing, so they warn on every step they last, and once they have lasted
``collapse_steps`` steps ``on_collapse`` acts: ``warn`` keeps warning, ``halt`` stops the run with a
checkpoint, ``adapt`` asks the trainer to raise its sampling temperature (trainer/hooks/health/hook.py).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from trainer.checks.config_error import ConfigError
from trainer.hooks.health.metrics import (
    ENTROPY,
    EPISODES_CUT,
    EPISODES_FAILED,
    EPISODES_REPLAYED,
    FORMAT_ERROR_RATE,
    GROUPS_ALL_EQUAL,
    KL,
    NONFINITE_ADVANTAGES,
    NONFINITE_REWARDS,
    RESPONSE_TOKENS,
    TOKEN_DRIFT,
    TURNS_CUT,
    VALID_TOOL_CALL_RATE,
    metric_key,
)

CONFIG_PREFIX = "turngym.health"


@dataclass(frozen=True)
class Guard:
    """One metric's guard: which side of the threshold is bad, its default, what it means, what to do."""

    name: str
    bad_side: str  # "above" or "below"
    default: float | None
    means: str
    fix: str
    # The advice once the run's model came from a warm start (None: `fix` holds then too).
    fix_after_warm_start: str | None = None

    def crossed(self, value: float, threshold: float) -> bool:
        """Whether `value` is on the bad side of `threshold` (NaN and inf always are)."""
        if not math.isfinite(value):
            return True
        return value > threshold if self.bad_side == "above" else value < threshold


GUARDS: dict[str, Guard] = {
    g.name: g
    for g in (
        Guard(
            GROUPS_ALL_EQUAL,
            "above",
            0.9,
            "share of GRPO groups whose samples all got the same reward, which teach nothing",
            "make the tasks fit the model (turngym.curriculum.enable=true turngym.curriculum.schedule=pass_rate, "
            "env.difficulty; turngym.mixture.enable=true to weigh envs by what they teach) or raise "
            "actor_rollout_ref.rollout.n",
        ),
        Guard(
            FORMAT_ERROR_RATE,
            "above",
            0.5,
            "share of turns the env could not read",
            "check the prompt and the tool-call format (actor_rollout_ref.rollout.multi_turn.format), "
            "or warm start on expert demos (turngym.warm_start.enable=true)",
            "the warm start on expert demos ran and its format did not carry over: check that the demos "
            "and the rollout use one format (actor_rollout_ref.rollout.multi_turn.format, the prompt) and "
            "that the warm start's loss fell (more turngym.warm_start.episodes or epochs)",
        ),
        Guard(
            VALID_TOOL_CALL_RATE,
            "below",
            0.05,
            "share of turns on tool envs that made a valid tool call",
            "check that the chat template shows the tools and the parser matches the model's format "
            "(actor_rollout_ref.rollout.multi_turn.format)",
        ),
        Guard(
            EPISODES_CUT,
            "above",
            0.5,
            "share of episodes cut by the token budget or the turn cap",
            "raise data.max_response_length or actor_rollout_ref.rollout.multi_turn.max_assistant_turns",
        ),
        Guard(
            TURNS_CUT,
            "above",
            0.8,
            "share of turns cut by the per-turn token cap",
            "raise turngym.max_tokens_per_turn",
        ),
        Guard(
            RESPONSE_TOKENS,
            "above",
            None,
            "generated tokens per episode",
            "lower data.max_response_length or turngym.max_tokens_per_turn",
        ),
        Guard(
            ENTROPY,
            "below",
            0.05,
            "token entropy of the policy: it is collapsing to fixed replies",
            "lower actor_rollout_ref.actor.optim.lr or add actor_rollout_ref.actor.entropy_coeff",
        ),
        Guard(
            KL,
            "above",
            1.0,
            "KL to the reference policy",
            "lower actor_rollout_ref.actor.optim.lr or raise the KL coefficient",
        ),
        Guard(
            EPISODES_FAILED,
            "above",
            0.2,
            "share of episodes that failed (left out of training)",
            "read turngym_error in the episodes and train.log (env errors, env servers, engine timeouts)",
        ),
        Guard(
            EPISODES_REPLAYED,
            "above",
            0.5,
            "share of episodes replayed on another env server",
            "check the env servers' health and turngym.env_server_timeout_s",
        ),
        Guard(
            NONFINITE_REWARDS,
            "above",
            0.0,
            "episodes with a NaN or infinite reward (left out of their group)",
            "find the env, penalty or reward function that returns it (e.g. a huge format_penalty)",
        ),
        Guard(
            NONFINITE_ADVANTAGES,
            "above",
            0.0,
            "rows with a NaN or infinite advantage",
            "check the rewards and the critic (algorithm.adv_estimator) for overflow",
        ),
        Guard(
            TOKEN_DRIFT,
            "above",
            None,
            "share of turns whose text re-tokenizes to other ids",
            "nothing to fix in turngym (it trains on the generated ids); a pipeline that re-tokenizes "
            "text would train on other tokens",
        ),
    )
}
DEFAULT_HALT_ON = (NONFINITE_REWARDS, NONFINITE_ADVANTAGES)
# The metrics whose lasting crossing is a collapse: the policy no longer produces a learning signal.
COLLAPSE_METRICS = (GROUPS_ALL_EQUAL, ENTROPY)
ON_COLLAPSE = ("warn", "halt", "adapt")


@dataclass(frozen=True)
class CollapsePolicy:
    """``turngym.health.on_collapse`` and its bounds: what a collapse lasting `steps` steps gets."""

    mode: str = "adapt"
    steps: int = 2
    # adapt: the sampling temperature rises by temperature_step per collapsed step, up to
    # max_temperature, and falls back by half a step per healthy one, never below the configured one.
    temperature_step: float = 0.1
    max_temperature: float = 1.5

    def __post_init__(self) -> None:
        if self.mode not in ON_COLLAPSE:
            raise ConfigError(
                f"{CONFIG_PREFIX}.on_collapse={self.mode!r}: give one of {', '.join(ON_COLLAPSE)}"
            )
        if isinstance(self.steps, bool) or not isinstance(self.steps, int) or not 1 <= self.steps <= 1000:
            raise ConfigError(
                f"{CONFIG_PREFIX}.collapse_steps={self.steps!r}: give a whole number from 1 to 1000"
            )
        if not (isinstance(self.temperature_step, int | float) and 0 < self.temperature_step <= 1):
            raise ConfigError(
                f"{CONFIG_PREFIX}.adapt_temperature_step={self.temperature_step!r}: give a number in (0, 1]"
            )
        if not (isinstance(self.max_temperature, int | float) and 0 < self.max_temperature <= 3):
            raise ConfigError(
                f"{CONFIG_PREFIX}.adapt_max_temperature={self.max_temperature!r}: give a number in (0, 3]"
            )

    @classmethod
    def pop_from(cls, health: dict[str, Any]) -> CollapsePolicy:
        """The policy from ``turngym.health``'s collapse keys, which it removes from `health`."""
        defaults = cls()
        return cls(
            mode=str(health.pop("on_collapse", defaults.mode)),
            steps=health.pop("collapse_steps", defaults.steps),
            temperature_step=health.pop("adapt_temperature_step", defaults.temperature_step),
            max_temperature=health.pop("adapt_max_temperature", defaults.max_temperature),
        )


def _threshold(value: Any, name: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigError(
            f"{CONFIG_PREFIX}.{name}={value!r}: give a finite number, or null to turn the guard off"
        )
    return float(value)


def _names(values: Iterable[Any], key: str) -> tuple[str, ...]:
    names = tuple(str(v) for v in values)
    unknown = [n for n in names if n not in GUARDS]
    if unknown:
        raise ConfigError(
            f"{CONFIG_PREFIX}.{key} names {', '.join(map(repr, unknown))}; valid metrics: {', '.join(GUARDS)}"
        )
    return names


@dataclass
class HealthGuard:
    """Thresholds and halts of one run; `check` is called once per training step."""

    thresholds: dict[str, float | None] = field(
        default_factory=lambda: {name: g.default for name, g in GUARDS.items()}
    )
    halt_on: tuple[str, ...] = DEFAULT_HALT_ON
    enable: bool = True
    collapse: CollapsePolicy = field(default_factory=CollapsePolicy)
    crossed: set[str] = field(default_factory=set)
    # Consecutive steps each collapse metric has been across its threshold.
    streaks: dict[str, int] = field(default_factory=dict)
    # Set by `check`: the collapse reading `adapt` must act on this step (None: nothing to adapt).
    adapt_due: str | None = None
    # The run's model came from a warm start: advice to warm start would mislead.
    warm_started: bool = False

    @classmethod
    def for_run(cls, config: Any) -> HealthGuard:
        """The guard of a training config: ``turngym.health``, and whether ``turngym.warm_start`` ran.

        Args:
            config: the run's composed config.

        Returns:
            The guard; raises ConfigError on a bad ``turngym.health`` value.
        """
        from omegaconf import OmegaConf

        guard = cls.from_config(config.turngym.get("health"))
        guard.warm_started = bool(OmegaConf.select(config, "turngym.warm_start.enable", default=False))
        return guard

    def fix(self, guard: Guard) -> str:
        """What to do about `guard`'s metric, for this run."""
        if self.warm_started and guard.fix_after_warm_start:
            return guard.fix_after_warm_start
        return guard.fix

    @classmethod
    def from_config(cls, health: Mapping[str, Any] | None) -> HealthGuard:
        """The guard of ``turngym.health`` (None or {}: every default); raises ConfigError on a bad value."""
        health = dict(health or {})
        enable = bool(health.pop("enable", True))
        collapse = CollapsePolicy.pop_from(health)
        halt_on = health.pop("halt_on", DEFAULT_HALT_ON)
        if isinstance(halt_on, str) or not isinstance(halt_on, Iterable):
            raise ConfigError(
                f"{CONFIG_PREFIX}.halt_on={halt_on!r}: give a list of metric names, e.g. [{NONFINITE_REWARDS}]"
            )
        halt = _names(halt_on, "halt_on")
        _names(health, "<metric>")
        thresholds = {name: g.default for name, g in GUARDS.items()}
        thresholds.update({name: _threshold(value, name) for name, value in health.items()})
        off = [n for n in halt if thresholds[n] is None]
        if off:
            raise ConfigError(
                f"{CONFIG_PREFIX}.halt_on lists {', '.join(off)} whose threshold is null; give "
                f"{CONFIG_PREFIX}.{off[0]} a number or drop it from halt_on"
            )
        return cls(thresholds=thresholds, halt_on=halt, enable=enable, collapse=collapse)

    def check(self, step: int, metrics: Mapping[str, Any]) -> tuple[list[str], str | None]:
        """This step's warning lines (one per metric that newly crossed) and the halt reason, if any.

        A metric in ``halt_on`` that is across its threshold halts on every step it is, not only
        on the first: a resumed run that is still sick stops again. A collapse metric warns on every
        step it lasts; after ``collapse_steps`` steps it halts (``on_collapse=halt``) or sets
        ``adapt_due`` (``adapt``).
        """
        self.adapt_due = None
        if not self.enable:
            return [], None
        lines, halt = [], None
        for name, threshold in self.thresholds.items():
            key = metric_key(name)
            if threshold is None or metrics.get(key) is None:
                continue
            value, guard = float(metrics[key]), GUARDS[name]
            if not guard.crossed(value, threshold):
                self.crossed.discard(name)
                self.streaks.pop(name, None)
                continue
            reading = self.reading(name, value, threshold)
            if name in COLLAPSE_METRICS and name not in self.halt_on:
                streak = self.streaks[name] = self.streaks.get(name, 0) + 1
                lasting = streak >= self.collapse.steps
                if lasting and self.collapse.mode == "halt" and halt is None:
                    halt = f"{reading}, {streak} steps in a row (on_collapse=halt)"
                else:
                    if lasting and self.collapse.mode == "adapt" and self.adapt_due is None:
                        self.adapt_due = reading
                    lines.append(
                        f"[turngym] health warning at step {step}: {reading}, {streak} step(s) in a row "
                        f"(on_collapse={self.collapse.mode} acts after {self.collapse.steps}); {self.fix(guard)} "
                        f"(threshold {CONFIG_PREFIX}.{name})"
                    )
            elif name in self.halt_on and halt is None:
                halt = reading
            elif name not in self.crossed:
                lines.append(
                    f"[turngym] health warning at step {step}: {reading}; {self.fix(guard)} "
                    f"(threshold {CONFIG_PREFIX}.{name})"
                )
            self.crossed.add(name)
        return lines, halt

    def reading(self, name: str, value: float, threshold: float) -> str:
        """``health/<name> <value> > <threshold> (<what it means>)``."""
        guard = GUARDS[name]
        side = ">" if guard.bad_side == "above" else "<"
        shown = f"{value:.4g}" if math.isfinite(value) else str(value)
        return f"{metric_key(name)} {shown} {side} {threshold:g} ({guard.means})"
