"""Shared fixtures for rollout tests: the embedded tiny model (both template families) and engines."""

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def model_path():
    from rollout.embedded_model import build_embedded_model

    return build_embedded_model()


@pytest.fixture(scope="session")
def llama3_path():
    from rollout.embedded_model import build_embedded_model

    return build_embedded_model(template="llama3")


@pytest.fixture(scope="session")
def tokenizer(model_path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(model_path)


@pytest.fixture(scope="session")
def llama3_tokenizer(llama3_path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(llama3_path)


@pytest.fixture(scope="session")
def hf_engine(model_path):
    from rollout.hf_engine import HFEngine

    return HFEngine(model_path, seed=0)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def unused_port() -> int:
    return free_port()


@pytest.fixture(scope="session")
def served_url(model_path):
    """`python -m rollout.serve` in a real subprocess on a loopback port."""
    import httpx

    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "rollout.serve", "--model-path", str(model_path), "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 120
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"rollout.serve exited: {proc.stderr.read().decode()[-2000:]}")
        try:
            if httpx.get(url + "/ready", timeout=1).status_code == 200:
                break
        except httpx.TransportError:
            time.sleep(0.2)
    else:
        proc.kill()
        raise RuntimeError("rollout.serve did not become ready")
    yield url
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
