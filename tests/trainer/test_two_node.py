"""Training across two Ray nodes: `ray start` twice on this machine, then `trainer.run ... trainer.nnodes=2`.

The cluster is private to the test: its own --temp-dir (so `ray.init()` elsewhere on the machine never
finds it), its own ports and its own auth token. Each node is a `ray start --block` process in its own
session; stopping it with SIGTERM is Ray's own shutdown of that node alone (`ray stop` would stop every
Ray instance of this user on the machine), and the test then checks that no process of the cluster is left.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RAY = str(Path(sys.executable).with_name("ray"))
# The smallest run that still does a real step on both nodes: FSDP over 2 ranks (one per node), one
# rollout replica and one agent-loop worker per node, micro-batches that split 4 episodes over 2 ranks.
SMALL = [
    "env=guess-number",
    "env.train_episodes=8",
    "env.val_episodes=4",
    "data.train_batch_size=4",
    "actor_rollout_ref.rollout.n=2",
    "actor_rollout_ref.actor.ppo_mini_batch_size=4",
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2",
    "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=2",
    "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=2",
    "actor_rollout_ref.rollout.agent.num_workers=2",
    "data.max_response_length=96",
    "turngym.warm_start.enable=false",
    "trainer.logger=[console]",
    "trainer.val_before_train=false",
    "trainer.test_freq=-1",
    "trainer.nnodes=2",
    "trainer.n_gpus_per_node=1",
]


def _free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _cluster_pids(sessions: set[int], temp_dir: str) -> list[int]:
    """Live processes of this cluster: in a node's session (Ray's workers rename themselves `ray::...`,
    so their command lines say nothing), or naming the cluster's temp dir."""
    out = subprocess.run(["ps", "-eo", "pid=,sid=,stat=,args="], capture_output=True, text=True).stdout
    pids = []
    for line in out.splitlines():
        pid, sid, stat, args = (line.strip().split(None, 3) + ["", "", ""])[:4]
        if (int(sid) in sessions or temp_dir in args) and not stat.startswith("Z"):
            pids.append(int(pid))
    return pids


class TwoNodeCluster:
    """A head and a second node, each `ray start --block` with one logical GPU and a custom resource."""

    def __init__(self, root: Path) -> None:
        # A short path: Ray's Unix sockets live under it and their paths are limited to ~107 bytes.
        self.temp_dir = tempfile.mkdtemp(prefix="tg-ray-", dir="/tmp")
        self.logs = root
        self.env = {
            **os.environ,
            "OMP_NUM_THREADS": "1",
            "RAY_AUTH_MODE": "token",
            "RAY_AUTH_TOKEN": secrets.token_hex(32),
            "RAY_USAGE_STATS_ENABLED": "0",
        }
        self.env.pop("RAY_ADDRESS", None)
        self.nodes: list[subprocess.Popen] = []
        self.port = 0

    def _start(self, name: str, args: list[str]) -> None:
        ports = _free_ports(7)
        cmd = [
            RAY,
            "start",
            "--block",
            "--node-ip-address=127.0.0.1",
            # Each node its own session folder, as on separate machines (on a shared one both nodes'
            # log monitors would forward every worker's lines, so the console would show them twice).
            f"--temp-dir={self.temp_dir}/{name}",
            "--num-cpus=8",  # logical: verl's pools ask 3 CPUs per bundle, plus its service actors
            "--num-gpus=1",  # logical: the CPU platform names its devices "GPU"
            f"--resources={json.dumps({name: 1})}",
            "--object-store-memory=268435456",
            f"--node-manager-port={ports[0]}",
            f"--object-manager-port={ports[1]}",
            f"--dashboard-agent-listen-port={ports[2]}",
            f"--dashboard-agent-grpc-port={ports[3]}",
            f"--metrics-export-port={ports[4]}",
            f"--runtime-env-agent-port={ports[5]}",
            *args,
        ]
        if "--head" in args:
            cmd.append(f"--dashboard-port={ports[6]}")
        log = (self.logs / f"{name}.log").open("w")
        self.nodes.append(
            subprocess.Popen(cmd, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        )

    def start(self) -> None:
        self.port, client_port = _free_ports(2)
        self._start(
            "node_a",
            [
                "--head",
                f"--port={self.port}",
                f"--ray-client-server-port={client_port}",
                "--include-dashboard=false",
            ],
        )
        self._wait_for_nodes(1)
        self._start("node_b", [f"--address=127.0.0.1:{self.port}"])
        self._wait_for_nodes(2)

    def _wait_for_nodes(self, n: int, timeout: float = 90) -> None:
        deadline = time.time() + timeout
        status = ""
        while time.time() < deadline:
            assert all(p.poll() is None for p in self.nodes), self._logs()
            status = subprocess.run(
                [RAY, "status", f"--address=127.0.0.1:{self.port}"],
                env=self.env,
                capture_output=True,
                text=True,
                timeout=60,
            ).stdout
            if f"/{n}.0 GPU" in status:  # "0.0/2.0 GPU": both nodes' logical GPUs are in the cluster
                return
            time.sleep(1)
        raise AssertionError(f"{n} node(s) not up in {timeout} s: {status}\n{self._logs()}")

    def _logs(self) -> str:
        return "\n".join(p.read_text()[-2000:] for p in sorted(self.logs.glob("node_*.log")))

    def stop(self) -> list[int]:
        """SIGTERM each node (Ray drains and stops that node's processes); return any process left."""
        for proc in reversed(self.nodes):  # the second node first, the head last
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=60)
        sessions = {p.pid for p in self.nodes}  # each `ray start` leads its own session
        deadline = time.time() + 30
        while (left := _cluster_pids(sessions, self.temp_dir)) and time.time() < deadline:
            time.sleep(0.5)
        for pid in left:  # never left running, even when the test fails on them
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for proc in self.nodes:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        shutil.rmtree(self.temp_dir, ignore_errors=True)
        return left


@pytest.fixture
def two_nodes(tmp_path):
    cluster = TwoNodeCluster(tmp_path)
    try:
        cluster.start()
        yield cluster
    finally:
        left = cluster.stop()
    assert not left, f"processes of the test's Ray cluster outlived its shutdown: {left}"


def _train_steps(metrics: Path) -> list[int]:
    if not metrics.exists():
        return []
    steps = []
    for line in metrics.read_text().splitlines():
        with contextlib.suppress(json.JSONDecodeError):
            record = json.loads(line)
            if record.get("kind") == "train":
                steps.append(record["step"])
    return steps


def _checkpointed_step(marker: Path) -> int | None:
    try:
        text = marker.read_text().strip()
    except FileNotFoundError:
        return None
    return int(text) if text.isdigit() else None


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_two_node_run_places_work_on_both_nodes_and_resumes_after_sigkill(two_nodes, tmp_path):
    out = tmp_path / "run"
    env = {**two_nodes.env, "RAY_ADDRESS": f"127.0.0.1:{two_nodes.port}"}
    cmd = [
        sys.executable,
        "-m",
        "trainer.run",
        f"turngym.output_dir={out}",
        *SMALL,
        "trainer.total_training_steps=2",
        "trainer.save_freq=1",
    ]
    # More nodes than the cluster has: one line before anything is written, not a run waiting forever.
    too_many = subprocess.run(
        [*cmd, "trainer.nnodes=3"], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
    )
    assert too_many.returncode == 2, too_many.stdout[-3000:] + too_many.stderr[-3000:]
    assert too_many.stderr.strip().count("\n") == 0, too_many.stderr
    assert "has 2 node(s), 2 with 1 GPU(s)" in too_many.stderr and "trainer.nnodes=3" in too_many.stderr
    assert not out.exists()

    log = (tmp_path / "first.log").open("w")
    first = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    marker = out / "checkpoints" / "latest_checkpointed_iteration.txt"
    deadline = time.time() + 600
    while time.time() < deadline and first.poll() is None:
        saved = _checkpointed_step(marker)
        if saved is not None and saved in _train_steps(out / "metrics.jsonl"):
            break
        time.sleep(0.2)
    text = (tmp_path / "first.log").read_text()
    assert first.poll() is None, "the first run ended before it could be killed:\n" + text[-3000:]
    # Only the driver dies: the nodes stay up, as on a real cluster; Ray ends the dead job's actors.
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=60)
    assert _checkpointed_step(marker) == 1

    placement = json.loads((out / "placement.json").read_text())
    by_role = {}
    for row in placement:
        by_role.setdefault(row["role"].rsplit(" ", 1)[0], []).append(row)
    for role in ("actor rank", "rollout replica", "agent-loop worker"):
        rows = by_role[role]
        assert len({r["node_id"] for r in rows}) == 2, (role, rows)
        assert sorted(r["resources"][0] for r in rows) == ["node_a", "node_b"], (role, rows)
    # Each replica's server runs on the node of the actor rank that feeds it its weights.
    ranks = {r["role"].rsplit(" ", 1)[1]: r["node_id"] for r in by_role["actor rank"]}
    assert all(r["node_id"] == ranks[r["role"].rsplit(" ", 1)[1]] for r in by_role["rollout replica"])
    assert text.count("[turngym] placement over 2 node(s)") == 1, text[-3000:]

    # The rerun needs the GPU bundle of both nodes: it starts only once Ray has ended the killed job's
    # actors and removed its placement groups.
    second = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    assert "resuming after step 1" in second.stdout + second.stderr
    assert _train_steps(out / "metrics.jsonl") == [1, 2]
    assert _checkpointed_step(marker) == 2


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        ("127.0.0.1:{closed}", "cannot reach the Ray cluster at 127.0.0.1:{closed}"),
        ("no-port-here", "is not host:port"),
        ("auto", "no cluster started with `ray start` on this machine"),
    ],
)
def test_unreachable_cluster_address_is_one_line_before_anything_is_written(
    address, expected, tmp_path, monkeypatch, capsys, run_trainer
):
    closed = _free_ports(1)[0]  # bound and released: nothing listens there
    monkeypatch.setenv("RAY_TMPDIR", str(tmp_path))  # where `ray start` records its address: nothing there
    monkeypatch.setenv("RAY_ADDRESS", address.format(closed=closed))
    out = tmp_path / "run"
    code = run_trainer(["env=guess-number", f"turngym.output_dir={out}", "trainer.nnodes=2"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1 and expected.format(closed=closed) in err[0], err
    assert "ray start --head" in err[0] or "e.g. 10.0.0.1:6379" in err[0]  # what to do
    assert not out.exists()


def test_worker_env_and_cluster_address_reach_ray_init(monkeypatch):
    """What verl's run_ppo hands ray.init: the workers' environment (on other nodes they do not inherit
    the driver's) and, when joining, the address without the platform's own CPU/GPU counts."""
    from omegaconf import OmegaConf

    from trainer.cluster.ray_cluster import join_existing_cluster
    from trainer.compose import compose_config
    from trainer.run import put_worker_env

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    cfg = compose_config(["env=guess-number", "trainer.device=cpu"])
    put_worker_env(cfg, {"VERL_PLATFORM": "cpu", "PYTHONPATH": "/checkout"})
    ray_init = OmegaConf.to_container(cfg.ray_kwargs.ray_init, resolve=True)
    assert ray_init["runtime_env"]["env_vars"] == {"VERL_PLATFORM": "cpu", "PYTHONPATH": "/checkout"}
    assert join_existing_cluster(cfg) is None  # no address: trainer.run starts its own Ray with its counts
    assert ray_init["num_cpus"] == 16 and ray_init["num_gpus"] == 1

    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.1:6379")
    assert join_existing_cluster(cfg) == "10.0.0.1:6379"
    ray_init = OmegaConf.to_container(cfg.ray_kwargs.ray_init, resolve=True)
    assert ray_init["address"] == "10.0.0.1:6379"
    assert ray_init["num_cpus"] is None and ray_init["num_gpus"] is None  # ray.init refuses them when joining
    assert ray_init["runtime_env"]["env_vars"]["VERL_PLATFORM"] == "cpu"
