"""The compute dtype follows the machine: a real matmul probe decides `auto`, a forced choice wins, and
the trainer's actor (and nothing on a GPU) takes the choice."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from trainer.checks.config_error import ConfigError
from trainer.compose import (
    ACTOR_PARAM_DTYPE,
    BYPASS_MODE,
    compose_config,
    compute_dtype_line,
    warm_start_compute_dtype,
)
from turngym.engines import compute_dtype
from turngym.engines.compute_dtype import (
    BF16_MIN_SPEEDUP,
    MatmulRates,
    choose_compute_dtype,
    dtype_for,
    measure_matmul_rates,
)


def test_the_probe_measures_both_dtypes_on_this_cpu_and_auto_follows_it():
    rates = measure_matmul_rates()
    assert rates.fp32 > 0 and rates.bf16 > 0 and rates.threads >= 1 and rates.cpu
    choice = choose_compute_dtype("auto")
    assert choice.rates == rates  # measured once per process
    assert choice.dtype == ("bf16" if rates.bf16 >= BF16_MIN_SPEEDUP * rates.fp32 else "fp32")
    line = choice.line()
    assert line.startswith(f"compute dtype {choice.dtype}, measured on this CPU: fp32 ")
    assert "GFLOP/s, bf16 " in line and rates.cpu in line and "\n" not in line


def test_an_avx2_only_cpu_gets_fp32_and_one_with_bf16_units_gets_bf16():
    # the two machines of the issue: emulated bf16 (0.7 vs 35 GFLOP/s) and bf16 units (806 vs 197)
    assert dtype_for(MatmulRates(35.0, 0.7, 2, "AVX2")) == "fp32"
    assert dtype_for(MatmulRates(197.0, 806.0, 2, "AVX-512 bf16")) == "bf16"
    assert dtype_for(MatmulRates(100.0, 150.0, 2, "marginal")) == "fp32"  # casts would eat the gain


@pytest.mark.parametrize("forced", ["fp32", "bf16"])
def test_a_forced_dtype_measures_nothing_and_reaches_the_actor(forced):
    assert choose_compute_dtype(forced).rates is None
    cfg = compose_config(["env=guess-number", "trainer.device=cpu", f"turngym.compute_dtype={forced}"])
    assert cfg.actor_rollout_ref.actor.fsdp_config.mixed_precision.param_dtype == forced
    assert compute_dtype_line(cfg).startswith(f"compute dtype {forced} (turngym.compute_dtype={forced})")
    assert warm_start_compute_dtype(cfg) == forced


SMOLLM2 = ["env=guess-number-shaped", "model=smollm2-135m-instruct", "trainer.device=cpu"]


def _on_a_cpu_with_bf16_units(monkeypatch):
    # Another machine kind than this one, for `auto`: the real probe is tested above.
    monkeypatch.setattr(
        compute_dtype, "measure_matmul_rates", lambda: MatmulRates(197.0, 806.0, 2, "bf16 units")
    )


def test_in_bypass_mode_auto_keeps_the_actor_at_the_rollouts_fp32_and_the_warm_start_takes_bf16(monkeypatch):
    _on_a_cpu_with_bf16_units(monkeypatch)
    cfg = compose_config(SMOLLM2)  # the preset reads the rollout's log-probs as the old policy's
    assert OmegaConf.select(cfg, BYPASS_MODE) is True
    assert cfg.actor_rollout_ref.actor.fsdp_config.mixed_precision.param_dtype == "fp32"
    assert warm_start_compute_dtype(cfg) == "bf16"
    line = compute_dtype_line(cfg)
    assert line.startswith("compute dtype bf16 for the warm start, fp32 for the actor") and "806" in line
    # with old log-probs recomputed by the actor, its ratio is exact in bf16 too: auto takes bf16
    cfg = compose_config([*SMOLLM2, f"{BYPASS_MODE}=false"])
    assert cfg.actor_rollout_ref.actor.fsdp_config.mixed_precision.param_dtype == "bf16"


def test_a_forced_bf16_actor_recomputes_the_old_log_probs_unless_bypass_is_asked_for_too():
    cfg = compose_config([*SMOLLM2, "turngym.compute_dtype=bf16"])
    assert cfg.actor_rollout_ref.actor.fsdp_config.mixed_precision.param_dtype == "bf16"
    assert OmegaConf.select(cfg, BYPASS_MODE) is False
    assert "old log-probs recomputed by the actor" in compute_dtype_line(cfg)
    cfg = compose_config([*SMOLLM2, "turngym.compute_dtype=bf16", f"{BYPASS_MODE}=true"])
    assert OmegaConf.select(cfg, BYPASS_MODE) is True
    assert "every ratio carries the bf16 actor's rounding" in compute_dtype_line(cfg)
    # fp32 keeps the preset's bypass: its ratio compares fp32 with fp32
    cfg = compose_config([*SMOLLM2, "turngym.compute_dtype=fp32"])
    assert OmegaConf.select(cfg, BYPASS_MODE) is True


def test_auto_sets_the_actor_from_the_probe_and_the_command_line_wins():
    cfg = compose_config(["env=guess-number", "trainer.device=cpu", "turngym.compute_dtype=auto"])
    assert cfg.actor_rollout_ref.actor.fsdp_config.mixed_precision.param_dtype == choose_compute_dtype().dtype
    cfg = compose_config(["env=guess-number", "trainer.device=cpu", f"{ACTOR_PARAM_DTYPE}=bf16"])
    assert cfg.actor_rollout_ref.actor.fsdp_config.mixed_precision.param_dtype == "bf16"
    assert "on the command line" in compute_dtype_line(cfg)
    # the embedded model's preset is fp32 (its figures were measured so)
    cfg = compose_config(["env=guess-number", "trainer.device=cpu"])
    assert cfg.turngym.compute_dtype == "fp32"


def test_an_unknown_dtype_is_one_line():
    with pytest.raises(ValueError, match="turngym.compute_dtype='fp16': give one of auto, fp32, bf16"):
        choose_compute_dtype("fp16")
    with pytest.raises(ConfigError, match="turngym.compute_dtype='fp16': give one of auto, fp32, bf16"):
        compose_config(["env=guess-number", "trainer.device=cpu", "turngym.compute_dtype=fp16"])


@pytest.mark.parametrize("measured_now", ["fp32", "bf16"])
def test_a_resume_under_auto_computes_in_the_dtype_its_steps_used(tmp_path, monkeypatch, measured_now):
    """`auto` measured again on a loaded machine can land on the other side of the threshold; the user
    changed nothing, so the resume keeps the run's dtype instead of being refused or switching."""
    from trainer.checks.resume_settings import config_yaml, settings_since

    rates = {"fp32": MatmulRates(35.0, 0.7, 2, "AVX2"), "bf16": MatmulRates(197.0, 806.0, 2, "bf16 units")}
    base = [
        "env=guess-number-shaped",
        "model=smollm2-135m-instruct",
        "trainer.device=cpu",
        f"{BYPASS_MODE}=false",
    ]
    args = [*base, f"turngym.output_dir={tmp_path}", "turngym.compute_dtype=auto"]
    used = "bf16" if measured_now == "fp32" else "fp32"
    monkeypatch.setattr(compute_dtype, "measure_matmul_rates", lambda: rates[used])
    (tmp_path / "config.yaml").write_text(config_yaml(compose_config(args)))  # as a run records it
    monkeypatch.setattr(compute_dtype, "measure_matmul_rates", lambda: rates[measured_now])
    cfg = compose_config(args)
    assert cfg.actor_rollout_ref.actor.fsdp_config.mixed_precision.param_dtype == measured_now
    assert settings_since(cfg, 3) == []
    assert cfg.actor_rollout_ref.actor.fsdp_config.mixed_precision.param_dtype == used
    # a forced dtype is the user's change: reported (and refused without turngym.resume_changed)
    cfg = compose_config([*base, f"turngym.output_dir={tmp_path}", f"turngym.compute_dtype={measured_now}"])
    changes = dict((key, (old, new)) for key, old, new in settings_since(cfg, 3))
    assert changes[ACTOR_PARAM_DTYPE] == (used, measured_now)
