"""Rollout ``hf``: turngym's ``rollout.HFEngine`` in a Ray actor, behind verl's rollout interfaces.

Shapes mirror verl's vLLM rollout (``verl/workers/rollout/vllm_rollout/``):

- ``HFRolloutServer``: the server actor. It adds to ``HFEngine`` (the sampler ``rollout.eval``
  uses, so training samples exactly as evaluation does) only verl's request conventions
  (``max_tokens`` from the configured lengths, ``TokenOutput``, ``global_steps``) and
  ``update_weights(state_dict)``, which loads the trainer's weights into the engine in place.
- ``HFReplica``: the ``RolloutReplica`` verl's ``LLMServerManager`` builds; launches one server.
- ``HFServerAdapter``: the ``BaseRollout`` living in each actor worker; on every weight sync it
  gathers the full tensors from the FSDP engine and ships them to its replica's server.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Iterable
from typing import Any

import ray
import torch
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
from verl.workers.rollout.base import BaseRollout
from verl.workers.rollout.replica import RolloutReplica, TokenOutput

from turngym.engines.hf_engine import HFEngine

logger = logging.getLogger(__name__)

SERVER_NAME_PREFIX = "hf_server_"


def _server_name(replica_rank: int, name_suffix: str = "") -> str:
    return f"{SERVER_NAME_PREFIX}{replica_rank}_0{name_suffix}"


def _get(config: Any, key: str, default: Any = None) -> Any:
    getter = getattr(config, "get", None)
    return getter(key, default) if callable(getter) else getattr(config, key, default)


class HFRolloutServer:
    """Serves generate for one replica with ``rollout.HFEngine``; receives new weights each step."""

    def __init__(
        self, config: Any, model_config: Any, replica_rank: int = 0, max_batch_size: int = 64
    ) -> None:
        self.config = config
        self.replica_rank = replica_rank
        path = _get(model_config, "local_path") or _get(model_config, "path")
        torch.set_num_threads(
            max(1, min(int(os.environ.get("TURNGYM_ROLLOUT_THREADS", "2")), os.cpu_count() or 1))
        )
        # The rollout seed makes a run's samples reproducible; replicas must not repeat each other.
        seed = int(_get(config, "seed", 0) or 0) + replica_rank
        self.engine = HFEngine(
            path,
            tokenizer=_get(model_config, "tokenizer_path") or None,
            max_batch_size=max_batch_size,
            seed=seed,
        )
        self.global_steps: int | None = None

    @property
    def model(self) -> Any:
        """The engine's model (the one the weights are loaded into)."""
        return self.engine.model

    def ready(self) -> bool:
        """Return once the model is loaded."""
        return True

    # ------------------------------------------------------------------ generate
    async def generate(
        self, prompt_ids: list[int], sampling_params: dict[str, Any], request_id: str = "", **_: Any
    ) -> TokenOutput:
        """Token-in/token-out generation with per-token logprobs (verl's server contract)."""
        params = dict(sampling_params)
        max_tokens = params.pop("max_tokens", None) or params.pop("max_new_tokens", None)
        # verl's token budget, as its vLLM server computes it: the response length, capped by what
        # is left of prompt + response and by the model length.
        prompt_len, response_len = self.config.prompt_length, self.config.response_length
        if max_tokens is None:
            max_tokens = min(response_len, prompt_len + response_len - len(prompt_ids))
        limit = self.config.max_model_len or (prompt_len + response_len)
        params["max_tokens"] = max(1, min(int(max_tokens), limit - len(prompt_ids)))
        out = await self.engine.generate(str(request_id), prompt_ids=prompt_ids, sampling_params=params)
        return TokenOutput(
            token_ids=out.token_ids,
            log_probs=out.log_probs,
            stop_reason=out.stop_reason,
            extra_fields={"global_steps": self.global_steps},
        )

    # ------------------------------------------------------------------ weights
    async def update_weights(
        self, state_dict: dict[str, torch.Tensor], global_steps: int | None = None
    ) -> dict:
        """Load the trainer's full weights into the engine; report keys the model did not receive."""
        report = await self.engine.load_weights(state_dict)
        if global_steps is not None:
            self.global_steps = global_steps
        if report["missing"] or report["unexpected"]:
            logger.warning(
                "hf rollout weight sync: missing=%s unexpected=%s",
                report["missing"][:5],
                report["unexpected"][:5],
            )
        return report

    @property
    def weight_updates(self) -> int:
        """How many weight syncs the engine has received."""
        return self.engine.weight_version

    async def set_global_steps(self, global_steps: int) -> None:
        """Tag later outputs with the trainer step whose weights produced them."""
        self.global_steps = global_steps

    # ------------------------------------------------------------------ lifecycle no-ops on CPU
    async def wake_up(self, tags: list[str] | None = None) -> None:
        return None

    async def sleep(self) -> None:
        return None

    async def clear_kv_cache(self) -> None:
        return None

    async def release_kv_cache(self) -> None:
        return None

    async def resume_kv_cache(self) -> None:
        return None

    async def abort_all_requests(self, reject_request: bool = False, **_: Any) -> dict[str, Any]:
        return {"aborted_count": 0, "request_ids": []}

    async def abort_request(self, request_id: str, **_: Any) -> dict[str, Any]:
        return {"aborted": False, "request_id": request_id}

    async def resume_generation(self) -> None:
        return None

    async def wait_for_requests_to_drain(self) -> None:
        while self.engine.busy:  # a rare control call: polling is simpler than another event
            await asyncio.sleep(0.01)

    async def start_profile(self, **_: Any) -> None:
        return None

    async def stop_profile(self) -> None:
        return None


class HFReplica(RolloutReplica):
    """One ``HFRolloutServer`` actor per replica (the CPU stand-in for a vLLM/SGLang server)."""

    async def launch_servers(self) -> None:
        name = _server_name(self.replica_rank, self.name_suffix)
        options: dict[str, Any] = {"name": name, "max_concurrency": self.max_concurrency, "num_cpus": 0}
        if self.workers:
            # On its workers' node, as verl places its vLLM/SGLang servers: the weights each step and
            # the server's logs stay on the node that owns the replica.
            node_id = await self.workers[0].__ray_call__.remote(
                lambda worker: ray.get_runtime_context().get_node_id()
            )
            options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(node_id=node_id, soft=False)
        server = (
            ray.remote(HFRolloutServer)
            .options(**options)
            .remote(config=self.config, model_config=self.model_config, replica_rank=self.replica_rank)
        )
        await server.ready.remote()
        self.servers = [server]
        self._server_handle = server
        self._server_address = f"hf-replica-{self.replica_rank}{self.name_suffix}"

    def rollout_worker_use_gpu(self) -> bool:
        return False


class HFServerAdapter(BaseRollout):
    """Lives in each actor worker; forwards the trainer's weights to its replica's server."""

    def __init__(
        self, config: Any, model_config: Any, device_mesh: Any, replica_rank: int = -1, **kwargs: Any
    ):
        super().__init__(config, model_config, device_mesh)
        rank = int(os.environ.get("RANK", "0"))
        rollout_world = (
            self.config.tensor_model_parallel_size
            * self.config.data_parallel_size
            * self.config.pipeline_model_parallel_size
        )
        self.replica_rank = rank // rollout_world if replica_rank == -1 else replica_rank
        self.rollout_rank = rank % rollout_world
        self.is_leader_rank = self.rollout_rank == 0
        self._server = None

    def _server_handle(self):
        if self._server is None:
            self._server = ray.get_actor(_server_name(self.replica_rank))
        return self._server

    async def resume(self, tags: list[str]) -> None:
        return None

    async def release(self) -> None:
        return None

    @torch.no_grad()
    async def update_weights(
        self,
        weights: Iterable[tuple[str, torch.Tensor]],
        wire_format: str = "named_tensors",
        global_steps: int | None = None,
        **kwargs: Any,
    ) -> None:
        """Materialize every tensor (a collective on all ranks) and send them from the leader."""
        assert wire_format == "named_tensors", f"hf rollout supports named_tensors only, got {wire_format!r}"
        start = time.time()
        state: dict[str, torch.Tensor] = {}
        for name, tensor in weights:
            if self.is_leader_rank:
                state[name] = tensor.detach().to("cpu", copy=True)
        if not self.is_leader_rank:
            return
        report = await self._server_handle().update_weights.remote(state, global_steps)
        if report["missing"]:
            raise RuntimeError(f"hf rollout weight sync left parameters unset: {report['missing'][:10]}")
        logger.info("hf rollout: %d tensors synced in %.2fs", report["loaded"], time.time() - start)
