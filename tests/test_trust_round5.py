"""Issue 45, round 5 of the trust boundaries: a file or folder you did not write is data, and every number
is bounded wherever it enters. Each test replays an attack that worked on the code before it.

- numbers: `envs.make("maze-v0", format_penalty=1e300)` paid -1e300 per unreadable reply; guess-number
  took `ruled_out_penalty=inf`, `1e308` and `True`; a served env's reward of 3e38 or NaN went into the
  rollout as it came; `turngym.engines.serve` answered HTTP 500 to `temperature=1e-300` and `sampling_seed=2**200`;
  the trainer's command line took `success_threshold=nan`, a temperature and a learning rate of 1e308
  and curriculum weights of NaN.
"""

from __future__ import annotations

import sys
import textwrap

import httpx
import pytest

import envs
from envs.core.number_bounds import ENV_NUMBERS, check_env_numbers
from envs.registry.client_kwargs import ClientKwargError, check_client_kwargs
from envs.remote.wire import RemoteEnvError
from turngym.serving.loopback_server import spawn_server, stop_server

# --- numbers an env is built with --------------------------------------------------------------------


def _one_line_value_error(call, *names: str) -> str:
    with pytest.raises(ValueError) as refused:
        call()
    message = str(refused.value)
    assert "\n" not in message and all(name in message for name in names), message
    return message


@pytest.mark.parametrize("penalty", [1e300, 1e308, float("inf"), float("nan"), -1.0, True])
def test_make_refuses_a_format_penalty_out_of_the_table(penalty):
    _one_line_value_error(lambda: envs.make("maze-v0", format_penalty=penalty), "maze-v0", "format_penalty")


@pytest.mark.parametrize("turns", [10**9, True, 2.5, 0])
def test_make_refuses_a_turn_limit_out_of_the_table(turns):
    _one_line_value_error(lambda: envs.make("maze-v0", max_turns=turns), "max_turns")


@pytest.mark.parametrize("penalty", [float("inf"), 1e308, True, -0.5, float("nan")])
def test_guess_number_refuses_a_ruled_out_penalty_out_of_the_table(penalty):
    _one_line_value_error(
        lambda: envs.make("guess-number-v0", ruled_out_penalty=penalty), "ruled_out_penalty"
    )
    # Built directly, without the registry, the same bound holds.
    from envs.games.guess_number import GuessNumberEnv

    _one_line_value_error(lambda: GuessNumberEnv(ruled_out_penalty=penalty), "ruled_out_penalty")


@pytest.mark.parametrize(
    ("env_id", "kwargs"),
    [
        ("code-sandbox-v0", {"failed_run_penalty": 1e300}),
        ("code-sandbox-v0", {"run_timeout_s": float("inf")}),
        ("calculator-qa-v0", {"useful_call_reward": float("nan")}),
        ("math-tutor-v0", {"decay": 1e308}),
        ("shop-assistant-v0", {"elicit_weight": float("inf")}),
        ("textarena/TicTacToe-v0", {"opponent_attempts": 10**9}),
        ("repo-fix-v0", {"memory_mb": 10**12}),
        ("maze-v0", {"max_tool_time_s": float("inf")}),
    ],
)
def test_every_builtin_env_bounds_its_numbers_by_the_one_table(env_id, kwargs):
    (name,) = kwargs
    assert name in ENV_NUMBERS
    _one_line_value_error(lambda: envs.make(env_id, **kwargs), name)


def test_values_inside_the_table_still_build_and_play():
    env = envs.make("maze-v0", format_penalty=100.0, max_turns=3)
    env.reset(seed=0)
    assert env.step("banana")[1] == -100.0
    env = envs.make("guess-number-v0", ruled_out_penalty=0.1, progress_reward=0.5)
    assert env.unwrapped.ruled_out_penalty == 0.1
    check_env_numbers("own-env-v0", some_own_keyword=1e300)  # no bound of its own: only finiteness


def test_a_client_kwarg_that_is_a_number_is_held_to_the_table():
    spec = envs.spec("textarena/TicTacToe-v0")
    for seat in (10**9, float("inf"), True):
        with pytest.raises(ClientKwargError) as refused:
            check_client_kwargs(spec, {"seat": seat})
        assert refused.value.key == "seat" and "\n" not in str(refused.value)
    assert check_client_kwargs(spec, {"seat": 1}) == {"seat": 1}


# --- a served env's reward ---------------------------------------------------------------------------

PAYING_ENVS = textwrap.dedent(
    """
    import envs
    from turngym.chat.message import user
    from envs.core.step_result import StepResult
    from envs.core.text_env import TextEnv


    class Paying(TextEnv):
        pays = 1.0

        def _reset(self, options):
            return [user("Say anything.")], {}

        def _respond(self, turn):
            return StepResult([user("Paid.")], self.pays, terminated=True)


    class Huge(Paying):
        pays = 3e38


    class NotANumber(Paying):
        pays = float("nan")


    class Infinite(Paying):
        pays = float("-inf")


    envs.register("pays-one-v0", Paying)
    envs.register("pays-huge-v0", Huge)
    envs.register("pays-nan-v0", NotANumber)
    envs.register("pays-inf-v0", Infinite)
    """
)


@pytest.fixture(scope="module")
def paying_server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("paying")
    (folder / "paying_envs.py").write_text(PAYING_ENVS)
    url, proc = spawn_server(
        ["-m", "envs", "serve", "--import", "paying_envs"], env={"PYTHONPATH": str(folder)}
    )
    yield url
    stop_server(proc)


@pytest.mark.parametrize("env_id", ["pays-huge-v0", "pays-nan-v0", "pays-inf-v0"])
def test_a_served_reward_that_is_not_finite_or_is_huge_is_refused_at_the_client(paying_server, env_id):
    env = envs.make(env_id, remote=paying_server)
    try:
        env.reset(seed=0)
        with pytest.raises(RemoteEnvError) as refused:
            env.step("hello")
    finally:
        env.close()
    assert refused.value.code == "bad_reward" and "\n" not in str(refused.value)
    assert env_id in str(refused.value) and "reward=" in str(refused.value)


def test_a_served_reward_inside_the_bound_passes(paying_server):
    env = envs.make("pays-one-v0", remote=paying_server)
    try:
        env.reset(seed=0)
        assert env.step("hello")[1:3] == (1.0, True)
    finally:
        env.close()


# --- the model server's sampling parameters ----------------------------------------------------------


@pytest.mark.parametrize(
    "sampling",
    [
        {"temperature": 1e-300},
        {"sampling_seed": 2**200},
        {"temperature": 1e308},
        {"top_p": 0},
        {"top_k": 2**80},
        {"temperature": True},
    ],
)
def test_the_model_server_answers_out_of_bound_sampling_with_a_one_line_400(served_url, sampling):
    body = {"input_ids": [1, 2, 3], "sampling_params": {"max_new_tokens": 2, **sampling}}
    response = httpx.post(served_url + "/generate", json=body, timeout=120)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    (key,) = sampling
    assert error["code"] == "bad_request" and key in error["message"] and "\n" not in error["message"]


def test_the_model_server_still_samples_inside_the_bounds(served_url):
    for sampling in ({"temperature": 0}, {"temperature": 0.01, "sampling_seed": 2**63 - 1}):
        body = {"input_ids": [1, 2, 3], "sampling_params": {"max_new_tokens": 2, **sampling}}
        response = httpx.post(served_url + "/generate", json=body, timeout=120)
        assert response.status_code == 200, response.text
        assert len(response.json()["output_ids"]) <= 2


# --- the trainer's command line ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ("env.kwargs.ruled_out_penalty=inf", "ruled_out_penalty"),
        ("env.kwargs.ruled_out_penalty=1e308", "ruled_out_penalty"),
        ("turngym.success_threshold=nan", "turngym.success_threshold"),
        ("turngym.dump_every=1e9", "turngym.dump_every"),
        ("actor_rollout_ref.rollout.temperature=1e308", "actor_rollout_ref.rollout.temperature"),
        ("actor_rollout_ref.rollout.temperature=1e-300", "actor_rollout_ref.rollout.temperature"),
        ("actor_rollout_ref.actor.optim.lr=1e308", "actor_rollout_ref.actor.optim.lr"),
        ("turngym.curriculum.level_weights.easy=[nan,0,0]", "turngym.curriculum.level_weights.easy"),
        ("turngym.curriculum.level_weights.hard=[0,1e300,0]", "turngym.curriculum.level_weights.hard"),
    ],
)
def test_compose_refuses_numbers_out_of_bounds_in_one_line(override, key):
    from trainer.compose import ConfigError, compose_config

    with pytest.raises(ConfigError) as refused:
        compose_config(["env=guess-number", override, "trainer.device=cpu"])
    message = str(refused.value)
    assert key in message and "\n" not in message, message


def test_compose_still_takes_numbers_inside_the_bounds():
    from trainer.compose import compose_config

    cfg = compose_config(
        [
            "env=guess-number",
            "env.kwargs.ruled_out_penalty=0.1",
            "turngym.success_threshold=0.5",
            "actor_rollout_ref.rollout.temperature=0.01",
            "actor_rollout_ref.actor.optim.lr=1e-5",
            "turngym.curriculum.level_weights.easy=[0.5,0.5,0]",
            "trainer.device=cpu",
        ]
    )
    assert cfg.turngym.success_threshold == 0.5 and cfg.actor_rollout_ref.rollout.temperature == 0.01


# --- files in a run folder someone else prepared -----------------------------------------------------

PRECIOUS = "the user's own file\n"


@pytest.fixture
def planted(tmp_path):
    """A run folder and, outside it, a file of the user's that the folder's links point at."""
    victim = tmp_path / "victim.txt"
    victim.write_text(PRECIOUS)
    run = tmp_path / "run"
    run.mkdir()
    return run, victim


def _refused_in_one_line(call) -> str:
    from trainer.run_folder.files import RunFileError

    with pytest.raises(RunFileError) as refused:
        call()
    message = str(refused.value)
    assert "\n" not in message and ("symbolic link" in message or "FIFO" in message), message
    return message


def test_a_linked_run_lock_is_refused_and_its_target_untouched(planted):
    from trainer.run_folder.lock import RunLock, check_unlocked

    run, victim = planted
    (run / "run.lock").symlink_to(victim)
    _refused_in_one_line(lambda: RunLock(run, command="python -m trainer.run").acquire())
    _refused_in_one_line(lambda: check_unlocked(run))
    assert victim.read_text() == PRECIOUS and (run / "run.lock").is_symlink()


def test_a_linked_metrics_log_is_refused_and_its_target_untouched(planted):
    from trainer.report.progress import MetricsLog

    run, victim = planted
    (run / "metrics.jsonl").symlink_to(victim)
    log = MetricsLog(run / "metrics.jsonl")
    _refused_in_one_line(lambda: log.append(1, {"reward": 1.0}))
    _refused_in_one_line(lambda: log.truncate_after(0))
    assert victim.read_text() == PRECIOUS


def test_a_linked_halt_record_is_refused_and_its_target_untouched(planted):
    from trainer.hooks.health.halt import HealthHalt, clear_halt, read_halt, write_halt

    run, victim = planted
    (run / "health_halt.json").symlink_to(victim)
    _refused_in_one_line(lambda: write_halt(run, HealthHalt(3, "health/nonfinite_rewards 1 > 0", None)))
    _refused_in_one_line(lambda: read_halt(run))
    assert victim.read_text() == PRECIOUS
    clear_halt(run)  # removes the link itself, never what it names
    assert not (run / "health_halt.json").is_symlink() and victim.read_text() == PRECIOUS


def test_a_linked_run_record_is_refused_and_its_target_untouched(planted):
    from omegaconf import OmegaConf

    from trainer.checks.run_checks import write_run_record

    run, victim = planted
    (run / "run.json").symlink_to(victim)
    cfg = OmegaConf.create({"turngym": {"output_dir": str(run)}})
    _refused_in_one_line(lambda: write_run_record(cfg, {"env": "guess-number-v0"}))
    assert victim.read_text() == PRECIOUS


FIFO_CHECKS = {
    "run.lock": "from trainer.run_folder.lock import check_unlocked as check; check(sys.argv[1])",
    "health_halt.json": "from trainer.hooks.health.halt import read_halt as check; check(sys.argv[1])",
    "metrics.jsonl": "from trainer.report.progress import MetricsLog; MetricsLog(sys.argv[1] + '/metrics.jsonl').records()",
}


@pytest.mark.parametrize("name", sorted(FIFO_CHECKS))
def test_a_fifo_in_a_run_folder_is_refused_at_once_instead_of_hanging(tmp_path, name):
    import os
    import subprocess

    from turngym.serving.loopback_server import ROOT

    os.mkfifo(tmp_path / name)
    script = f"import sys\n{FIFO_CHECKS[name]}"
    try:
        # A guard against the hang, not a speed figure: the old open() waited for a writer forever.
        done = subprocess.run(
            [sys.executable, "-c", script, str(tmp_path)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"a FIFO named {name} hung the check for 60 s")
    assert done.returncode != 0 and f"{name} is a FIFO" in done.stderr, done.stderr[-2000:]
    assert (tmp_path / name).exists()


def test_run_folder_files_still_work_as_files(tmp_path):
    from trainer.hooks.health.halt import HealthHalt, halt_exit_code, write_halt
    from trainer.report.progress import MetricsLog
    from trainer.run_folder.lock import RunLock

    with RunLock(tmp_path, command="python -m trainer.run"):
        log = MetricsLog(tmp_path / "metrics.jsonl")
        log.append(1, {"reward": 0.5})
        log.append(2, {"reward": 0.7})
        assert log.truncate_after(1) == 1 and [r["step"] for r in log.records()] == [1]
        write_halt(tmp_path, HealthHalt(2, "health/kl 3 > 1", "ckpt/global_step_2"))
        write_halt(tmp_path, HealthHalt(2, "health/kl 3 > 1", "ckpt/global_step_2"))  # over a file: replaced
        assert halt_exit_code(tmp_path)[0] == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["health_halt.json", "metrics.jsonl"]


# --- a checkpoint folder a resume loads --------------------------------------------------------------

CRAFTED = r"""
import sys, torch

class Evil:
    def __reduce__(self):
        return (exec, (f"open({sys.argv[2]!r}, 'w').write('ran')",))

torch.save({"model.embed_tokens.weight": Evil()}, sys.argv[1])
"""

# What verl saves for a one-rank FSDP2 actor: DTensor weights and optimizer state, an extra state with
# the lr scheduler and the RNG states (numpy's included), and the dataloader's state.
GENUINE = r"""
import random, sys, numpy as np, torch, torch.distributed as dist
from pathlib import Path
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Shard, distribute_tensor

step = Path(sys.argv[1])
(step / "actor").mkdir(parents=True)
dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{sys.argv[2]}", rank=0, world_size=1)
mesh = init_device_mesh("cpu", (1,), mesh_dim_names=("fsdp",))
weight = distribute_tensor(torch.randn(8, 4), mesh, [Shard(0)])
torch.save({"model.embed_tokens.weight": weight}, step / "actor" / "model_world_size_1_rank_0.pt")
optim = {"state": {0: {"step": torch.tensor(1.0), "exp_avg": weight, "exp_avg_sq": weight}},
         "param_groups": [{"lr": 1e-3, "betas": (0.9, 0.999), "params": [0]}]}
torch.save(optim, step / "actor" / "optim_world_size_1_rank_0.pt")
rng = {"cpu": torch.get_rng_state(), "numpy": np.random.get_state(), "random": random.getstate()}
scheduler = {"base_lrs": [1e-3], "last_epoch": 1, "lr_lambdas": [None], "_last_lr": [1e-3]}
torch.save({"lr_scheduler": scheduler, "rng": rng}, step / "actor" / "extra_state_world_size_1_rank_0.pt")
torch.save({"_sampler_iter_state": {"samples_yielded": 8}, "_num_yielded": 2}, step / "data.pt")
dist.destroy_process_group()
"""


def _resume_cfg(tmp_path, *overrides: str):
    from trainer.compose import compose_config

    out = tmp_path / "out"
    return compose_config(["env=guess-number", f"turngym.output_dir={out}", "trainer.device=cpu", *overrides])


def _crafted_step(folder, marker):
    import subprocess

    actor = folder / "actor"
    actor.mkdir(parents=True)
    done = subprocess.run(
        [sys.executable, "-c", CRAFTED, str(actor / "model_world_size_1_rank_0.pt"), str(marker)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return folder


def test_a_resume_from_a_crafted_checkpoint_is_refused_before_anything_unpickles_it(tmp_path):
    from trainer.checks.run_checks import check_run
    from trainer.compose import ConfigError

    marker = tmp_path / "pwned"
    step = _crafted_step(tmp_path / "given" / "global_step_1", marker)
    cfg = _resume_cfg(tmp_path, "trainer.resume_mode=resume_path", f"trainer.resume_from_path={step}")
    with pytest.raises(ConfigError) as refused:
        check_run(cfg)  # what trainer.run calls before Ray starts and verl loads the folder
    message = str(refused.value)
    assert "model_world_size_1_rank_0.pt" in message and "\n" not in message, message
    assert "trust_checkpoint" in message and not marker.exists()
    # The user's own word for a checkpoint they trust: the check steps aside (verl loads it as before).
    from trainer.checks.run_checks import check_resume_checkpoint

    trusted = _resume_cfg(
        tmp_path,
        "trainer.resume_mode=resume_path",
        f"trainer.resume_from_path={step}",
        "+turngym.trust_checkpoint=true",
    )
    check_resume_checkpoint(trusted)
    assert not marker.exists()


def test_the_latest_checkpoint_of_a_prepared_run_folder_is_checked_as_well(tmp_path):
    from trainer.checks.run_checks import check_run
    from trainer.compose import ConfigError

    marker = tmp_path / "pwned"
    cfg = _resume_cfg(tmp_path)
    checkpoints = tmp_path / "out" / "checkpoints"
    assert str(cfg.trainer.default_local_dir) == str(checkpoints)
    _crafted_step(checkpoints / "global_step_2", marker)
    (checkpoints / "latest_checkpointed_iteration.txt").write_text("2")
    with pytest.raises(ConfigError, match="global_step_2/actor/model_world_size_1_rank_0.pt"):
        check_run(cfg)
    assert not marker.exists()


def test_a_genuine_fsdp2_checkpoint_still_resumes(tmp_path):
    import subprocess

    from trainer.checks.run_checks import check_resume_checkpoint
    from turngym.serving.loopback_server import free_port

    step = tmp_path / "given" / "global_step_1"
    done = subprocess.run(
        [sys.executable, "-c", GENUINE, str(step), str(free_port())],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    cfg = _resume_cfg(tmp_path, "trainer.resume_mode=resume_path", f"trainer.resume_from_path={step}")
    check_resume_checkpoint(cfg)  # every file loads weights-only: no refusal
