"""Env servers as a pool: `envs.make(id, remote=[url, ...])` on real `python -m envs serve` servers.

Episodes spread over the live servers; a dead or hung server leaves the pool and the episodes it held are
replayed on a live one, answering exactly as local play; with no live server the error is one line.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

import envs
from envs.remote import RemoteEnvError
from envs.remote.pool import EnvServerPool
from envs.remote.pooled_env import PooledRemoteEnv
from turngym.serving.loopback_server import free_port, spawn_server, stop_server

ENV_ID = "guess-number-v0"


def _serve(port: int | None = None):
    return spawn_server(["-m", "envs", "serve"], port=port)


def _sessions(url: str) -> int:
    return httpx.get(f"{url}/health", timeout=5).json()["sessions"]


def _expert_script(seed: int) -> list[tuple[str, tuple]]:
    """The expert's actions for `seed` and the local env's answers (messages, reward, terminated, truncated)."""
    env = envs.make(ENV_ID)
    env.reset(seed=seed)
    out = []
    while True:
        action = env.unwrapped.expert_action()
        result = env.step(action)
        out.append((action, tuple(result[:4])))
        if result[2] or result[3]:
            return out


@pytest.fixture(scope="module")
def steady_servers():
    """Two servers no test stops (tests using them close every session they open)."""
    started = [_serve(), _serve()]
    yield [url for url, _ in started]
    for _, proc in started:
        stop_server(proc)


@pytest.fixture
def two_servers():
    """Two servers a test may kill or stop."""
    started = [_serve(), _serve()]
    procs = [proc for _, proc in started]
    # The same list the test gets: a server a test starts again in a slot is stopped here too.
    yield [url for url, _ in started], procs
    for proc in procs:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGCONT)
        stop_server(proc)


def test_episodes_spread_evenly_and_play_as_local(steady_servers):
    urls = steady_servers
    pool = EnvServerPool(urls)
    made = [PooledRemoteEnv(ENV_ID, pool) for _ in range(6)]
    try:
        assert [_sessions(u) for u in urls] == [3, 3]
        assert sorted(m.url for m in made) == sorted(urls * 3)
        env = made[0]
        local = envs.make(ENV_ID)
        assert env.reset(seed=5)[0] == local.reset(seed=5)[0]
        for action, seen in _expert_script(5):
            assert tuple(env.step(action)[:4]) == seen
    finally:
        for env in made:
            env.close()
    assert [_sessions(u) for u in urls] == [0, 0]
    assert [s.open_sessions for s in pool.servers.values()] == [0, 0]


def test_a_server_down_from_the_start_is_left_out_with_a_warning(steady_servers, caplog):
    urls = steady_servers
    dead = f"http://127.0.0.1:{free_port()}"
    pool = EnvServerPool([dead, urls[0]])
    with caplog.at_level(logging.WARNING, logger="envs.remote.pool"):
        made = [PooledRemoteEnv(ENV_ID, pool) for _ in range(3)]
    assert {m.url for m in made} == {urls[0]}
    assert [r.getMessage() for r in caplog.records if dead in r.getMessage()] == [
        f"env server {dead} is down ({pool.servers[dead].reason}); out of the pool, 1 of 2 left"
    ]
    for env in made:
        env.close()


def test_no_live_server_is_one_line_naming_each():
    dead = [f"http://127.0.0.1:{free_port()}" for _ in range(2)]
    with pytest.raises(RemoteEnvError) as caught:
        envs.make(ENV_ID, remote=dead)
    message = str(caught.value)
    assert "\n" not in message and message.startswith("all 2 env servers are down: ")
    assert all(url in message for url in dead) and "ConnectError" in message
    with pytest.raises(
        RemoteEnvError, match=r"env server http://127\.0\.0\.1:\d+ \(.*\) is not reachable; start it"
    ):
        envs.make(ENV_ID, remote=dead[:1])


@pytest.mark.parametrize("bad", [[], ["localhost:8000"], [8000], ("x",)])
def test_bad_server_lists_are_one_line(bad):
    with pytest.raises(ValueError, match=r"^remote="):
        envs.make(ENV_ID, remote=bad)


@pytest.mark.parametrize("fault", ["SIGKILL", "SIGSTOP"])
def test_episode_moves_to_a_live_server_by_replay(two_servers, fault):
    urls, procs = two_servers
    pool = EnvServerPool(urls, health_timeout_s=1.0, recheck_s=60.0)
    env = PooledRemoteEnv(ENV_ID, pool, timeout_s=2.0)
    first = env.url
    other = urls[1 - urls.index(first)]
    script = _expert_script(11)
    assert len(script) >= 3
    env.reset(seed=11)
    half = len(script) // 2
    for action, seen in script[:half]:
        assert tuple(env.step(action)[:4]) == seen
    os.kill(procs[urls.index(first)].pid, getattr(signal, fault))
    for action, seen in script[half:]:
        assert tuple(env.step(action)[:4]) == seen
    assert env.url == other
    assert len(env.failovers) == 1
    move = env.failovers[0]
    assert (move["from"], move["to"], move["replayed_steps"], move["seed"]) == (first, other, half, 11)
    kind = "ReadTimeout" if fault == "SIGSTOP" else "Connect"
    assert kind in move["reason"]
    assert pool.servers[first].alive is False
    # The next episode starts on the live server, and a fresh reset clears the record.
    env.reset(seed=12)
    assert env.failovers == [] and env.url == other
    env.close()


def test_astep_moves_too(two_servers):
    urls, procs = two_servers
    env = PooledRemoteEnv(ENV_ID, EnvServerPool(urls, recheck_s=60.0))
    script = _expert_script(3)
    env.reset(seed=3)

    async def play() -> None:
        await env.astep(script[0][0])
        procs[urls.index(env.url)].kill()
        for action, seen in script[1:]:
            assert tuple((await env.astep(action))[:4]) == seen

    asyncio.run(play())
    assert env.failovers[0]["replayed_steps"] == 1
    env.close()


def test_unseeded_episode_is_lost_not_replayed(two_servers):
    urls, procs = two_servers
    env = PooledRemoteEnv(ENV_ID, EnvServerPool(urls, recheck_s=60.0))
    env.reset()
    procs[urls.index(env.url)].kill()
    with pytest.raises(RemoteEnvError, match="an unseeded episode cannot be replayed") as caught:
        env.step("<guess>50</guess>")
    assert caught.value.code == "episode_lost"
    env.close()


def test_all_servers_dying_loses_the_episode_in_one_line(two_servers):
    urls, procs = two_servers
    env = PooledRemoteEnv(ENV_ID, EnvServerPool(urls, recheck_s=60.0))
    env.reset(seed=1)
    for proc in procs:
        proc.kill()
        proc.wait()
    with pytest.raises(RemoteEnvError) as caught:
        env.step("<guess>50</guess>")
    assert caught.value.code == "episode_lost" and "all 2 env servers are down" in str(caught.value)
    assert "\n" not in str(caught.value)
    env.close()


def test_a_server_that_returns_is_back_in_the_pool(two_servers):
    urls, procs = two_servers
    pool = EnvServerPool(urls, recheck_s=0.0)
    port = int(urls[0].rsplit(":", 1)[1])
    procs[0].kill()
    procs[0].wait()
    held = PooledRemoteEnv(ENV_ID, pool)
    assert held.url == urls[1]
    assert pool.servers[urls[0]].alive is False
    _, procs[0] = _serve(port)
    # While another server is live, a down one is probed in the background: picks go on meanwhile.
    deadline = time.monotonic() + 30
    while pool.servers[urls[0]].alive is not True and time.monotonic() < deadline:
        pool.pick()
        time.sleep(0.05)
    back = PooledRemoteEnv(ENV_ID, pool)
    assert back.url == urls[0]  # the least loaded: it holds none, the other one
    for env in (held, back):
        env.close()


def test_a_hung_server_is_probed_without_stalling_picks(two_servers):
    urls, procs = two_servers
    pool = EnvServerPool(urls, health_timeout_s=5.0, recheck_s=0.0)
    assert pool.pick() in urls
    os.kill(procs[0].pid, signal.SIGSTOP)
    pool.mark_down(urls[0], "test: stopped")
    assert pool.pick() == urls[1]
    # The probe of the stopped server is still waiting on it when pick has already answered.
    assert urls[0] in pool._probing
    assert pool.pick() == urls[1]


# ----- python -m envs serve --workers N -------------------------------------------------------------


def _worker_pids(front_pid: int) -> list[int]:
    out = subprocess.run(["ps", "-eo", "pid=,ppid=,args="], capture_output=True, text=True).stdout
    rows = (line.split(None, 2) for line in out.splitlines() if line.strip())
    return [int(pid) for pid, ppid, args in rows if int(ppid) == front_pid and "envs.server.worker" in args]


def _gone(pids: list[int], within_s: float = 15.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        alive = []
        for pid in pids:
            try:
                os.kill(pid, 0)
                alive.append(pid)
            except ProcessLookupError:
                pass
        if not alive:
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def workers_server():
    url, proc = spawn_server(["-m", "envs", "serve", "--workers", "2"])
    yield url, proc
    pids = _worker_pids(proc.pid)
    stop_server(proc)
    assert _gone(pids), f"workers outlived the front: {pids}"


def test_workers_share_one_port_and_each_session_stays_on_its_worker(workers_server):
    url, _ = workers_server
    made = [envs.make(ENV_ID, remote=url) for _ in range(4)]
    try:
        assert sorted(env.session_id.split("-")[0] for env in made) == ["w0", "w0", "w1", "w1"]
        for seed, env in enumerate(made):
            local = envs.make(ENV_ID)
            assert env.reset(seed=seed)[0] == local.reset(seed=seed)[0]
            for action, seen in _expert_script(seed)[:3]:
                assert tuple(env.step(action)[:4]) == seen
        # One connection for every session (a client that pools connections): each still reaches its own.
        with httpx.Client(base_url=url) as shared:
            for env in made + made[::-1]:
                state = shared.get(f"/v1/sessions/{env.session_id}/state").json()
                assert state["episode_id"] == env.session_id and state["step_count"] == min(
                    3, len(_expert_script(made.index(env)))
                )
            missing = shared.get("/v1/sessions/w1-nope/state")
            assert missing.status_code == 404 and "'w1-nope'" in missing.json()["error"]["message"]
            assert {shared.get("/health").json()["workers"] for _ in range(2)} == {2}
    finally:
        for env in made:
            env.close()


def test_a_request_line_sent_in_pieces_still_reaches_a_worker(workers_server):
    import socket

    url, _ = workers_server
    host, port = url.rsplit("/", 1)[-1].split(":")
    with socket.create_connection((host, int(port))) as conn:
        conn.sendall(b"GET /hea")
        time.sleep(0.3)
        conn.sendall(b"lth HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 200") and b'"workers": 2' in answer, answer[:300]


def _pid_of_worker(url: str) -> dict[int, int]:
    """Worker index -> pid, from /health on fresh connections (the front hands them out in turn)."""
    seen: dict[int, int] = {}
    for _ in range(8):
        health = httpx.get(f"{url}/health", timeout=10).json()
        seen[health["worker"]] = health["pid"]
    return seen


def test_a_killed_worker_is_restarted_and_only_its_sessions_are_lost(workers_server):
    url, proc = workers_server
    made = [envs.make(ENV_ID, remote=url) for _ in range(2)]
    by_worker = {int(env.session_id.split("-")[0][1:]): env for env in made}
    assert sorted(by_worker) == [0, 1]
    for env in made:
        env.reset(seed=1)
    pids = _pid_of_worker(url)
    os.kill(pids[0], signal.SIGKILL)
    with pytest.raises(RemoteEnvError):
        by_worker[0].step("<guess>50</guess>")
    assert by_worker[1].step("<guess>50</guess>")[2:4] == (False, False)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and _pid_of_worker(url).get(0) in (None, pids[0]):
        time.sleep(0.1)
    assert _pid_of_worker(url)[0] != pids[0]
    with httpx.Client(base_url=url) as client:
        lost = client.get(f"/v1/sessions/{by_worker[0].session_id}/state")
    assert lost.status_code == 404, lost.text
    fresh = [envs.make(ENV_ID, remote=url) for _ in range(2)]
    for env in fresh:
        env.reset(seed=2)
        env.close()
    for env in made:
        env.close()


def test_front_killed_leaves_no_worker():
    url, proc = spawn_server(["-m", "envs", "serve", "--workers", "2"])
    pids = _worker_pids(proc.pid)
    assert len(pids) == 2
    proc.kill()
    proc.wait()
    assert _gone(pids), f"workers outlived a killed front: {pids}"


@pytest.mark.parametrize("workers", ["0", "-1", "999"])
def test_bad_worker_count_is_one_line(workers):
    done = subprocess.run(
        [sys.executable, "-m", "envs", "serve", "--workers", workers, "--port", str(free_port())],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "--workers" in done.stderr, done.stderr


def test_pooled_env_keeps_the_env_contract(steady_servers):
    from envs.core.protocol import EnvProtocol, missing_members

    urls = steady_servers
    env = envs.make(ENV_ID, remote=urls)
    assert missing_members(env) == [] and isinstance(env, EnvProtocol)
    env.close()


def test_remote_env_bench_prints_its_tables():
    done = subprocess.run(
        [
            sys.executable,
            "bench/remote_env.py",
            "--episodes",
            "6",
            "--workers",
            "2",
            "--concurrency",
            "2",
            "--clients",
            "1",
            "--collect-episodes",
            "0",
        ],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [line.split("|")[1:-1] for line in done.stdout.splitlines() if line.startswith("| 2 workers |")]
    assert len(rows) == 1 and float(rows[0][2]) > 0 and float(rows[0][4]) <= float(rows[0][5]), done.stdout
    assert "| front of --workers 2 |" not in done.stdout  # needs the plain server's row to compare
