"""turngym plugs into verl 0.9.1 through verl's task runner and trainer registry; what it overrides is
checked at start-up, and `python -m trainer.run` refuses any other verl version before doing anything."""

import tomllib
from pathlib import Path

import pytest

from trainer.checks.verl_version import SUPPORTED_VERL, verl_version_problem

REPO = Path(__file__).resolve().parents[2]


def test_installed_verl_is_the_supported_one():
    assert verl_version_problem() is None


@pytest.mark.parametrize("extra", ["train", "gpu"])
def test_the_package_pins_the_supported_verl(extra):
    pins = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"][extra]
    assert f"verl[verl-core]=={SUPPORTED_VERL}" in pins


def test_run_refuses_another_verl_before_anything_is_written(monkeypatch, tmp_path, capsys):
    import trainer.checks.verl_version
    from trainer.run import main

    monkeypatch.setattr(trainer.checks.verl_version, "installed_verl_version", lambda: "0.9.2")
    out = tmp_path / "run"
    assert main(["env=text-game", f"turngym.output_dir={out}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "verl 0.9.2 is installed" in err[0] and f"verl=={SUPPORTED_VERL}" in err[0]
    assert not out.exists()


def test_missing_verl_is_one_clear_line(monkeypatch):
    import trainer.checks.verl_version

    monkeypatch.setattr(trainer.checks.verl_version, "installed_verl_version", lambda: None)
    assert "verl is not installed" in verl_version_problem()


def test_every_private_verl_method_turngym_overrides_is_checked():
    from verl.trainer.ppo.v1.trainer_sync import PPOTrainerSync

    from trainer.task_runner import VERL_PRIVATE_OVERRIDES, TurngymTrainer

    ours = {
        name
        for cls in TurngymTrainer.__mro__
        if cls.__module__.startswith("trainer.")
        for name in vars(cls)
        if name.startswith("_")
        and not name.startswith("__")
        and callable(getattr(PPOTrainerSync, name, None))
    }
    assert ours <= set(VERL_PRIVATE_OVERRIDES)


def test_the_installed_verl_has_every_extension_point():
    from trainer.task_runner import check_verl_extension_points

    check_verl_extension_points()


def _verl_trainer_without(name: str, **replaced):
    from verl.trainer.ppo.v1.trainer_sync import PPOTrainerSync

    from trainer.task_runner import VERL_PRIVATE_OVERRIDES

    methods = {n: getattr(PPOTrainerSync, n) for n in VERL_PRIVATE_OVERRIDES if n != name}
    return type("PPOTrainerSync", (), {**methods, **replaced})


def test_a_renamed_verl_method_fails_loudly():
    from trainer.task_runner import VerlIncompatibleError, check_verl_extension_points

    with pytest.raises(VerlIncompatibleError, match="PPOTrainerSync._compute_metrics is missing"):
        check_verl_extension_points(base=_verl_trainer_without("_compute_metrics"))


def test_a_reshaped_verl_method_fails_loudly():
    from trainer.task_runner import VerlIncompatibleError, check_verl_extension_points

    def _validate(self, merged=False):
        return {}

    with pytest.raises(VerlIncompatibleError, match="_validate.*no longer matches"):
        check_verl_extension_points(base=_verl_trainer_without("_validate", _validate=_validate))


def test_the_task_runner_is_verls_own():
    """Only `run` is turngym's: verl's agent-loop manager set-up (agent_loop_manager_class) is kept."""
    from verl.trainer.main_ppo import TaskRunnerV1

    from trainer.task_runner import TurngymTaskRunner

    ours = TurngymTaskRunner.__ray_actor_class__
    assert issubclass(ours, TaskRunnerV1.__ray_actor_class__)
    assert {n for n in vars(ours) if callable(vars(ours)[n]) and not n.startswith("__")} == {"run"}


class _Batch:
    keys, partition_id, tags = ["a", "b"], "train", [{}, {}]


class _Queue:
    """Stands in for the TransferQueue client (a real one needs a Ray cluster); data is a real TensorDict."""

    def __init__(self, fields=None, error=None):
        self.fields, self.error = fields or {}, error

    def kv_batch_get(self, keys, partition_id, select_fields):
        from tensordict import TensorDict

        if self.error is not None:
            raise self.error
        return TensorDict(
            {k: v for k, v in self.fields.items() if k in select_fields}, batch_size=[len(keys)]
        )


def test_a_field_the_batch_lacks_reads_as_none():
    import torch

    from trainer.task_runner import batch_field

    queue = _Queue({"rm_scores": torch.ones(2, 3)})
    assert batch_field(queue, _Batch(), "rm_scores").shape == (2, 3)
    assert batch_field(queue, _Batch(), "extra_fields") is None


def test_episode_metrics_from_real_batch_fields(monkeypatch):
    import torch
    import transfer_queue
    from tensordict import NonTensorData, NonTensorStack

    from trainer.report.progress import SUCCESS_KEY, TURNS_KEY
    from trainer.task_runner import TurngymTrainer

    class Trainer:
        success_threshold = 0.5

    extra = NonTensorStack(
        NonTensorData({"reward_extra_info": {"success": True, "turns": 2}}),
        NonTensorData({"reward_extra_info": {"success": False, "turns": 4}}),
    )
    queue = _Queue({"rm_scores": torch.tensor([[0.0, 1.0], [0.0, 0.0]]), "extra_fields": extra})
    monkeypatch.setattr(transfer_queue, "kv_batch_get", queue.kv_batch_get)
    metrics = TurngymTrainer._episode_metrics(Trainer(), _Batch())
    assert metrics[SUCCESS_KEY] == 0.5 and metrics[TURNS_KEY] == 3.0
    monkeypatch.setattr(transfer_queue, "kv_batch_get", _Queue({"rm_scores": torch.ones(2, 2)}).kv_batch_get)
    assert SUCCESS_KEY in TurngymTrainer._episode_metrics(Trainer(), _Batch())  # no extra_fields: scores only
    monkeypatch.setattr(transfer_queue, "kv_batch_get", _Queue({}).kv_batch_get)
    assert TurngymTrainer._episode_metrics(Trainer(), _Batch()) == {}


def test_any_other_failure_reading_the_batch_is_not_swallowed():
    from trainer.task_runner import batch_field

    with pytest.raises(ValueError, match="not ready"):
        batch_field(_Queue(error=ValueError("Some fields are not ready")), _Batch(), "rm_scores")


def test_another_trainer_mode_is_refused_before_ray(monkeypatch):
    from trainer.compose import ConfigError, compose_config

    with pytest.raises(ConfigError, match="trainer.v1.trainer_mode='colocate_async'.*sync"):
        compose_config(["env=text-game", "trainer.device=cpu", "trainer.v1.trainer_mode=colocate_async"])


def test_the_task_runner_trains_with_turngyms_trainer_after_rays_pickling(monkeypatch):
    """verl's run builds the trainer registered for `sync`: TurngymTrainer, also in a copy of the class
    made as Ray makes it (pickled by value, so a dict global of `run` would be a copy)."""
    import transfer_queue
    from ray import cloudpickle

    from trainer.compose import compose_config
    from trainer.task_runner import TurngymTaskRunner, TurngymTrainer

    class Built(Exception):
        pass

    def built(self, config):
        raise Built(type(self).__name__)

    monkeypatch.setattr(transfer_queue, "init", lambda *a, **k: None)
    monkeypatch.setattr(transfer_queue, "close", lambda *a, **k: None)
    monkeypatch.setattr(TurngymTrainer, "__init__", built)
    cfg = compose_config(["env=text-game", "trainer.device=cpu"])
    runner_cls = cloudpickle.loads(cloudpickle.dumps(TurngymTaskRunner.__ray_actor_class__))
    with pytest.raises(Built, match="TurngymTrainer"):
        runner_cls().run(cfg)
