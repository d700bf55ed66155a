"""Shared pytest configuration, and the fixtures tests/rollout and tests/engines share: the embedded
tiny model (both template families), its tokenizers, an HFEngine, a model server on loopback, and a counter of tool-call parses."""

import os
from pathlib import Path

import pytest

# Ray, tokenizers and torch each start thread pools sized to the machine; tests share 2 cores.
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("OMP_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def model_path():
    from turngym.engines.embedded_model import build_embedded_model

    return build_embedded_model()


@pytest.fixture(scope="session")
def llama3_path():
    from turngym.engines.embedded_model import build_embedded_model

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
    from turngym.engines.hf_engine import HFEngine

    return HFEngine(model_path, seed=0)


@pytest.fixture
def unused_port() -> int:
    from turngym.serving.loopback_server import free_port

    return free_port()


@pytest.fixture(scope="session")
def served_url(model_path):
    """`python -m turngym.engines.serve` in a real subprocess on a loopback port."""
    from turngym.serving.loopback_server import spawn_server, stop_server

    url, proc = spawn_server(
        ["-m", "turngym.engines.serve", "--model-path", str(model_path)],
        ready_path="/ready",
        env={"PYTHONPATH": str(ROOT)},
        ready_s=120.0,
    )
    yield url
    stop_server(proc)


@pytest.fixture
def parses(monkeypatch):
    """Every text parsed for tool calls while the test runs, through the names the rollout and the env use."""
    import turngym.chat.calls
    import turngym.chat.calls.formats

    real = turngym.chat.calls.formats.parse_tool_calls
    seen: list[str] = []

    def counted(text, *args, **kwargs):
        seen.append(text)
        return real(text, *args, **kwargs)

    monkeypatch.setattr(turngym.chat.calls, "parse_tool_calls", counted)
    monkeypatch.setattr(turngym.chat.calls.formats, "parse_tool_calls", counted)
    return seen
