"""Training on a pool of env servers survives one that dies (SIGKILL) and one that hangs (SIGSTOP).

`python -m trainer.run` on the embedded model plays guess-number on three `python -m envs serve` servers
(`turngym.env_servers`). During step 1 one server is killed while it holds episodes; during step 2 another
is stopped, so its requests run into `turngym.env_server_timeout_s`. The episodes they held are replayed
from their seeds on the live server, both steps complete, the run finishes, and metrics.jsonl counts the
replayed and failed episodes of each step.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from turngym.serving.loopback_server import free_port, spawn_server, stop_server

REPO = Path(__file__).resolve().parents[2]


def _health(url: str) -> dict:
    try:
        return httpx.get(f"{url}/health", timeout=0.5).json()
    except (httpx.HTTPError, ValueError):
        return {}


def _train_records(metrics: Path) -> list[dict]:
    if not metrics.exists():
        return []
    records = []
    for line in metrics.read_text().splitlines():
        with contextlib.suppress(json.JSONDecodeError):
            record = json.loads(line)
            if record.get("kind") == "train":
                records.append(record)
    return records


def _when(condition, proc: subprocess.Popen, within_s: float) -> bool:
    """Poll `condition` every 20 ms until it holds (True), the run exits or time runs out (False)."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline and proc.poll() is None:
        if condition():
            return True
        time.sleep(0.02)
    return False


def _tail(tmp_path: Path, what: str) -> str:
    return f"{what}; the run said:\n" + (tmp_path / "train.out").read_text()[-4000:]


def _holds_episodes(url: str) -> bool:
    health = _health(url)
    return health.get("sessions", 0) >= 1 and health.get("steps", 0) >= 1


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_training_survives_a_killed_and_a_hung_env_server(tmp_path):
    servers = [spawn_server(["-m", "envs", "serve"]) for _ in range(3)]
    (killed, killed_proc), (hung, hung_proc), _ = servers
    out = tmp_path / "run"
    command = [
        sys.executable,
        "-m",
        "trainer.run",
        "env.id=guess-number-v0",
        f"turngym.output_dir={out}",
        f"turngym.env_servers=[{','.join(url for url, _ in servers)}]",
        "turngym.env_server_timeout_s=3",
        "turngym.warm_start.enable=false",
        "env.train_episodes=8",
        "env.val_episodes=2",
        "data.train_batch_size=4",
        "actor_rollout_ref.rollout.n=2",
        "actor_rollout_ref.actor.ppo_mini_batch_size=4",
        "data.max_response_length=128",
        "trainer.total_training_steps=2",
        "trainer.val_before_train=false",
        "trainer.test_freq=-1",
        "trainer.save_freq=-1",
        "trainer.logger=[console]",
    ]
    log = (tmp_path / "train.out").open("w")
    proc = subprocess.Popen(command, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        # Step 1: SIGKILL a server while it holds episodes mid-play.
        assert _when(lambda: _holds_episodes(killed), proc, 240), _tail(tmp_path, "no episode on server 1")
        killed_proc.send_signal(signal.SIGKILL)
        # Step 2: SIGSTOP another while it holds episodes: its calls hang until the request timeout.
        metrics = out / "metrics.jsonl"
        assert _when(lambda: len(_train_records(metrics)) >= 1 and _holds_episodes(hung), proc, 120), _tail(
            tmp_path, "step 2 put no episode on server 2"
        )
        hung_proc.send_signal(signal.SIGSTOP)
        proc.wait(timeout=240)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()
        with contextlib.suppress(ProcessLookupError):
            hung_proc.send_signal(signal.SIGCONT)
        for _, server in servers:
            stop_server(server)
    output = (tmp_path / "train.out").read_text()
    assert proc.returncode == 0, output[-4000:]
    records = _train_records(out / "metrics.jsonl")
    assert [r["step"] for r in records] == [1, 2]
    replayed = [r["turngym/episodes_replayed"] for r in records]
    failed = [r["turngym/episodes_failed"] for r in records]
    print(f"\nreplayed per step {replayed}, failed per step {failed}")
    # Every episode the dead or hung server held moved to the live one; none was lost. The kill can land
    # after the episodes it saw on that server made their last request, so a step may replay none
    # (seen once in CI: [0, 2]); across both steps at least one replay must have happened.
    assert sum(replayed) >= 1, (replayed, failed)
    assert failed == [0.0, 0.0], (replayed, failed)
    assert "[turngym] step 2/2" in output


def test_no_live_env_server_stops_the_run_before_ray_in_one_line(run_trainer, tmp_path, capsys):
    dead = [f"http://127.0.0.1:{free_port()}" for _ in range(2)]
    code = run_trainer(
        [
            "env.id=guess-number-v0",
            f"turngym.output_dir={tmp_path / 'run'}",
            f"turngym.env_servers=[{','.join(dead)}]",
        ]
    )
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err.count("\n") == 0 and "turngym.env_servers: all 2 env servers are down" in err, err
    assert all(url in err for url in dead)
    assert not (tmp_path / "run").exists()


def test_a_down_env_server_is_one_warning_line_and_bad_entries_refused(capsys):
    from omegaconf import OmegaConf

    from trainer.checks.config_error import ConfigError
    from trainer.checks.env_server_check import check_env_servers

    url, proc = spawn_server(["-m", "envs", "serve"])
    dead = f"http://127.0.0.1:{free_port()}"
    try:
        check_env_servers(
            OmegaConf.create({"turngym": {"env_servers": [url, dead], "env_server_timeout_s": 5}})
        )
    finally:
        stop_server(proc)
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"[turngym] env server {dead} is down (ConnectError"), (
        lines
    )
    assert lines[0].endswith("starting on the other 1, it rejoins when it answers")
    for bad in (["localhost:8000"], "localhost:8000", [url, 5]):
        with pytest.raises(ConfigError, match=r"^turngym\.env_servers=.*: give a list of env server URLs"):
            check_env_servers(OmegaConf.create({"turngym": {"env_servers": bad}}))
    with pytest.raises(ConfigError, match="env_server_timeout_s must be"):
        check_env_servers(OmegaConf.create({"turngym": {"env_servers": [url], "env_server_timeout_s": 0}}))
