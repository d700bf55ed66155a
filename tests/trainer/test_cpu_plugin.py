"""The CPU plugin: platform registration, patches, and the 'hf' rollout server (real tiny model, no Ray).

Sampling itself (same tokens as rollout.eval's HFEngine) is tested in test_one_sampler.py.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from types import SimpleNamespace

import pytest
import torch

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_plugin_loads_through_verls_hook_in_a_fresh_process():
    code = (
        "import verl\n"
        "from verl.utils.device import get_device_name, get_nccl_backend, get_resource_name, get_torch_device\n"
        "assert get_device_name() == 'cpu' and get_nccl_backend() == 'gloo' and get_resource_name() == 'GPU'\n"
        "t = torch.ones(2).to(verl.utils.device.get_device_id())\n"
        "assert get_torch_device().memory_allocated() == 0 and t.device.type == 'cpu'\n"
        "from verl.workers.engine.base import EngineRegistry\n"
        "import verl.workers.engine.fsdp.transformer_impl as impl\n"
        "assert EngineRegistry.get_engine_cls('language_model', 'fsdp2').__name__ == 'FSDPEngineWithLMHead'\n"
        "assert EngineRegistry.get_engine_cls('value_model', 'fsdp2') is not None\n"
        "assert impl.CPUOffloadPolicy().pin_memory is False\n"
        "from verl.workers.rollout.base import get_rollout_class\n"
        "from verl.workers.rollout.replica import get_rollout_replica_class\n"
        "assert get_rollout_class('hf').__name__ == 'HFServerAdapter'\n"
        "assert get_rollout_replica_class('hf').__name__ == 'HFReplica'\n"
        "import verl.utils.distributed as d, inspect\n"
        "assert d.initialize_global_process_group_ray.__wrapped__ is not None\n"
        "print('ok')\n"
    )
    env = dict(os.environ, VERL_USE_EXTERNAL_MODULES="trainer.cpu", VERL_PLATFORM="cpu", PYTHONPATH=REPO)
    out = subprocess.run(
        [sys.executable, "-c", "import torch\n" + code], env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().endswith("ok")


@pytest.fixture(scope="module")
def server():
    from turngym.engines.embedded_model import build_embedded_model
    from turngym.engines.hf_rollout import HFRolloutServer

    path = str(build_embedded_model())
    config = SimpleNamespace(prompt_length=256, response_length=16, max_model_len=None)
    return HFRolloutServer(config, {"path": path})


def test_generate_returns_tokens_and_logprobs_matching_the_model(server):
    prompts = [[1, 2, 3, 4], [5, 6]]

    async def go():
        return await asyncio.gather(
            *[
                server.generate(p, {"temperature": 1.0, "max_tokens": 6}, request_id=str(i))
                for i, p in enumerate(prompts)
            ]
        )

    outs = asyncio.run(go())
    for prompt, out in zip(prompts, outs, strict=True):
        assert 1 <= len(out.token_ids) <= 6 and len(out.log_probs) == len(out.token_ids)
        ids = torch.tensor([prompt + out.token_ids])
        with torch.no_grad():
            logits = server.model(input_ids=ids).logits[0, len(prompt) - 1 : -1]
        expected = (
            torch.log_softmax(logits.float(), -1).gather(-1, torch.tensor(out.token_ids)[:, None]).squeeze(-1)
        )
        assert torch.allclose(expected, torch.tensor(out.log_probs), atol=1e-4)


def test_server_honours_stop_tokens_and_says_why_it_stopped(server):
    from turngym.engines.hf_engine import HFEngine

    assert isinstance(server.engine, HFEngine)  # one sampler: the actor wraps rollout's engine

    async def run(params):
        return await server.generate([7, 8, 9], {"temperature": 0.0, **params})

    free = asyncio.run(run({"max_tokens": 6, "ignore_eos": True}))
    assert free.stop_reason == "length" and len(free.token_ids) == 6
    stop_at = free.token_ids[2]
    cut = asyncio.run(run({"max_tokens": 6, "ignore_eos": True, "stop_token_ids": [stop_at]}))
    assert cut.token_ids == free.token_ids[: free.token_ids.index(stop_at) + 1]
    assert cut.stop_reason == "completed"
    # Without max_tokens the budget is verl's: response_length, within prompt + response length.
    assert len(asyncio.run(run({"ignore_eos": True})).token_ids) == 16


def test_greedy_is_deterministic_and_weights_update(server):
    async def greedy():
        return await server.generate([7, 8, 9], {"temperature": 0.0, "max_tokens": 5})

    first = asyncio.run(greedy())
    assert asyncio.run(greedy()).token_ids == first.token_ids
    state = {k: torch.zeros_like(v) for k, v in server.model.state_dict().items()}
    report = asyncio.run(server.update_weights(state, global_steps=3))
    assert report["missing"] == [] and report["unexpected"] == []
    out = asyncio.run(greedy())
    assert out.extra_fields["global_steps"] == 3
    assert all(abs(lp - out.log_probs[0]) < 1e-5 for lp in out.log_probs)  # all-zero model: uniform
