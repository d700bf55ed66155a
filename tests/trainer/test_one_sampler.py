"""One sampler: the trainer's `hf` rollout server and `rollout.eval`'s HFEngine give the same tokens.

Both sides play the same episodes through `rollout.collect`; only the engine differs. The trainer's
side is `HFRolloutServer` (the Ray actor class behind verl's `hf` rollout) driven in-process the
way verl's `LLMServerManager` calls it (keyword arguments), without Ray.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from rollout.collection import collect
from rollout.episode import EpisodeConfig

SEED = 42
EPISODE = EpisodeConfig(max_turns=4, max_prompt_tokens=512, max_response_tokens=96, max_new_tokens=24)


class _ServerManagerCalls:
    """Calls the server as verl's LLMServerManager does: `server.generate(request_id=, prompt_ids=, ...)`."""

    def __init__(self, server) -> None:
        self.server = server

    async def generate(self, request_id, *, prompt_ids, sampling_params):
        return await self.server.generate(
            request_id=request_id, prompt_ids=prompt_ids, sampling_params=dict(sampling_params)
        )


@pytest.fixture(scope="module")
def model_path():
    from turngym.engines.embedded_model import build_embedded_model

    return str(build_embedded_model())


@pytest.fixture(scope="module")
def tokenizer(model_path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(model_path)


def _both_sides(model_path, tokenizer, concurrency: int, sampling_params: dict):
    from turngym.engines.hf_engine import HFEngine
    from turngym.engines.hf_rollout import HFRolloutServer

    config = SimpleNamespace(prompt_length=512, response_length=96, max_model_len=None, seed=SEED)
    server = HFRolloutServer(config, {"path": model_path})
    engines = {"eval": HFEngine(model_path, seed=SEED), "trainer": _ServerManagerCalls(server)}
    return {
        side: collect(
            "guess-number-v0",
            engine,
            tokenizer,
            6,
            concurrency=concurrency,
            seed=3,
            env_kwargs={"difficulty": "easy"},
            sampling_params=sampling_params,
            config=EPISODE,
        )
        for side, engine in engines.items()
    }


def _assert_same(runs) -> None:
    ev, tr = runs["eval"], runs["trainer"]
    assert len(ev) == len(tr) == 6 and not ev.failed and not tr.failed
    for a, b in zip(ev, tr, strict=True):
        assert a.response_ids == b.response_ids
        assert a.loss_mask == b.loss_mask
        assert a.logprobs == pytest.approx(b.logprobs, abs=1e-5)
        assert [t.stop_reason for t in a.turns] == [t.stop_reason for t in b.turns]
    assert sum(sum(t.loss_mask) for t in ev) > 0


def test_same_seed_same_tokens_one_request_at_a_time(model_path, tokenizer):
    """What training does: no per-request seed, the engine's generator (seeded by the rollout seed)."""
    _assert_same(_both_sides(model_path, tokenizer, 1, {"temperature": 1.0, "top_p": 0.9, "top_k": 50}))


def test_same_request_seed_same_tokens_when_batched(model_path, tokenizer):
    """Concurrent episodes batch together; a request seed fixes each row's draws whatever the batch."""
    _assert_same(_both_sides(model_path, tokenizer, 6, {"temperature": 1.0, "top_k": 20, "seed": 11}))
