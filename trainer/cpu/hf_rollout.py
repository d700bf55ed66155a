"""Rollout ``hf``: a transformers model in a Ray actor that serves token-in/token-out generate.

Shapes mirror verl's vLLM rollout (``verl/workers/rollout/vllm_rollout/``):

- ``HFRolloutServer``: the server actor. ``generate(prompt_ids, sampling_params, request_id)``
  returns a ``TokenOutput`` (token ids + per-token logprobs). Requests arriving together are
  batched (left padding + KV cache). ``update_weights(state_dict)`` loads the trainer's weights.
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
from verl.workers.rollout.base import BaseRollout
from verl.workers.rollout.replica import RolloutReplica, TokenOutput

logger = logging.getLogger(__name__)

SERVER_NAME_PREFIX = "hf_server_"


def _server_name(replica_rank: int, name_suffix: str = "") -> str:
    return f"{SERVER_NAME_PREFIX}{replica_rank}_0{name_suffix}"


def _sampling_key(params: dict[str, Any]) -> tuple[float, float, int]:
    temperature = float(params.get("temperature", 1.0) or 0.0)
    top_p = float(params.get("top_p", 1.0) or 1.0)
    top_k = int(params.get("top_k", -1) or -1)
    return temperature, top_p, top_k


def _sample(
    logits: torch.Tensor, temperature: float, top_p: float, top_k: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Next tokens and their log-probabilities under the temperature-scaled distribution."""
    logits = logits.float()
    if temperature <= 0:
        tokens = logits.argmax(-1)
        logprobs = torch.log_softmax(logits, -1).gather(-1, tokens[:, None]).squeeze(-1)
        return tokens, logprobs
    scaled = logits / temperature
    logprobs_all = torch.log_softmax(scaled, -1)
    filtered = scaled.clone()
    if 0 < top_k < filtered.shape[-1]:
        kth = torch.topk(filtered, top_k, dim=-1).values[:, -1:]
        filtered[filtered < kth] = float("-inf")
    if top_p < 1.0:
        sorted_logits, order = torch.sort(filtered, descending=True, dim=-1)
        cumulative = torch.softmax(sorted_logits, -1).cumsum(-1)
        drop = cumulative - torch.softmax(sorted_logits, -1) > top_p
        sorted_logits[drop] = float("-inf")
        filtered = torch.full_like(filtered, float("-inf")).scatter(-1, order, sorted_logits)
    tokens = torch.multinomial(torch.softmax(filtered, -1), 1).squeeze(-1)
    return tokens, logprobs_all.gather(-1, tokens[:, None]).squeeze(-1)


class HFRolloutServer:
    """Serves generate for one replica with a transformers causal LM on CPU."""

    def __init__(
        self, config: Any, model_config: Any, replica_rank: int = 0, max_batch_size: int = 64
    ) -> None:
        from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

        self.config = config
        self.replica_rank = replica_rank
        self.max_batch_size = max_batch_size
        path = model_config.get("local_path") or model_config.get("path")
        torch.set_num_threads(
            max(1, min(int(os.environ.get("TURNGYM_ROLLOUT_THREADS", "2")), os.cpu_count() or 1))
        )
        self.model = AutoModelForCausalLM.from_pretrained(
            path, dtype=torch.float32, attn_implementation="sdpa"
        )
        self.model.eval()
        tokenizer = AutoTokenizer.from_pretrained(model_config.get("tokenizer_path") or path)
        eos: set[int] = set()
        try:
            gen_eos = GenerationConfig.from_pretrained(path).eos_token_id
        except OSError:
            gen_eos = None
        for value in (gen_eos, self.model.config.eos_token_id, tokenizer.eos_token_id):
            if isinstance(value, int):
                eos.add(value)
            elif isinstance(value, list | tuple):
                eos.update(int(v) for v in value)
        self.eos_ids = eos
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else min(eos, default=0)
        self.global_steps: int | None = None
        self._queue: list[tuple[list[int], dict[str, Any], asyncio.Future]] = []
        self._drainer: asyncio.Task | None = None
        self._model_lock = asyncio.Lock()
        self.weight_updates = 0

    def ready(self) -> bool:
        """Return once the model is loaded."""
        return True

    # ------------------------------------------------------------------ generate
    async def generate(
        self, prompt_ids: list[int], sampling_params: dict[str, Any], request_id: str = "", **_: Any
    ) -> TokenOutput:
        """Token-in/token-out generation with per-token logprobs."""
        params = dict(sampling_params)
        prompt_ids = [int(t) for t in prompt_ids]
        max_tokens = params.pop("max_tokens", None) or params.pop("max_new_tokens", None)
        prompt_len, response_len = self.config.prompt_length, self.config.response_length
        if max_tokens is None:
            max_tokens = min(response_len, prompt_len + response_len - len(prompt_ids))
        limit = self.config.max_model_len or (prompt_len + response_len)
        params["max_tokens"] = max(1, min(int(max_tokens), limit - len(prompt_ids)))
        future = asyncio.get_running_loop().create_future()
        self._queue.append((prompt_ids, params, future))
        if self._drainer is None or self._drainer.done():
            self._drainer = asyncio.create_task(self._drain())
        token_ids, log_probs = await future
        return TokenOutput(
            token_ids=token_ids,
            log_probs=log_probs,
            stop_reason="completed",
            extra_fields={"global_steps": self.global_steps},
        )

    async def _drain(self) -> None:
        while self._queue:
            await asyncio.sleep(0.005)  # let requests issued together share a batch
            batch, self._queue = self._queue[: self.max_batch_size], self._queue[self.max_batch_size :]
            groups: dict[tuple, list] = {}
            for item in batch:
                groups.setdefault(_sampling_key(item[1]), []).append(item)
            for key, items in groups.items():
                try:
                    async with self._model_lock:
                        results = await asyncio.to_thread(self._generate_batch, items, key)
                except Exception as exc:  # a failed batch must not strand its callers
                    for _, _, fut in items:
                        if not fut.done():
                            fut.set_exception(exc)
                    continue
                for (_, _, fut), result in zip(items, results, strict=True):
                    if not fut.done():
                        fut.set_result(result)

    @torch.no_grad()
    def _generate_batch(
        self, items: list, key: tuple[float, float, int]
    ) -> list[tuple[list[int], list[float]]]:
        temperature, top_p, top_k = key
        prompts = [p for p, _, _ in items]
        limits = [params["max_tokens"] for _, params, _ in items]
        batch, width = len(prompts), max(len(p) for p in prompts)
        input_ids = torch.full((batch, width), self.pad_id, dtype=torch.long)
        attention = torch.zeros((batch, width), dtype=torch.long)
        for i, prompt in enumerate(prompts):
            input_ids[i, width - len(prompt) :] = torch.tensor(prompt, dtype=torch.long)
            attention[i, width - len(prompt) :] = 1
        positions = (attention.cumsum(-1) - 1).clamp(min=0)
        out = self.model(
            input_ids=input_ids, attention_mask=attention, position_ids=positions, use_cache=True
        )
        past, logits = out.past_key_values, out.logits[:, -1]
        next_pos = positions[:, -1] + 1
        tokens_out: list[list[int]] = [[] for _ in range(batch)]
        logprobs_out: list[list[float]] = [[] for _ in range(batch)]
        done = [False] * batch
        for _ in range(max(limits)):
            tokens, logprobs = _sample(logits, temperature, top_p, top_k)
            for i in range(batch):
                if done[i]:
                    continue
                token = int(tokens[i])
                tokens_out[i].append(token)
                logprobs_out[i].append(float(logprobs[i]))
                if token in self.eos_ids or len(tokens_out[i]) >= limits[i]:
                    done[i] = True
            if all(done):
                break
            attention = torch.cat([attention, torch.ones((batch, 1), dtype=torch.long)], dim=1)
            out = self.model(
                input_ids=tokens[:, None],
                attention_mask=attention,
                position_ids=next_pos[:, None],
                past_key_values=past,
                use_cache=True,
            )
            past, logits = out.past_key_values, out.logits[:, -1]
            next_pos = next_pos + 1
        return list(zip(tokens_out, logprobs_out, strict=True))

    # ------------------------------------------------------------------ weights
    async def update_weights(
        self, state_dict: dict[str, torch.Tensor], global_steps: int | None = None
    ) -> dict:
        """Load the trainer's full weights; report keys the model did not receive."""
        async with self._model_lock:
            own = self.model.state_dict()
            usable = {k: v.to(own[k].dtype) for k, v in state_dict.items() if k in own}
            result = self.model.load_state_dict(usable, strict=False)
            tied = {"lm_head.weight"} if self.model.config.tie_word_embeddings else set()
            missing = sorted(set(result.missing_keys) - tied)
            unexpected = sorted(k for k in state_dict if k not in own)
            self.weight_updates += 1
            if global_steps is not None:
                self.global_steps = global_steps
        if missing or unexpected:
            logger.warning("hf rollout weight sync: missing=%s unexpected=%s", missing[:5], unexpected[:5])
        return {"loaded": len(usable), "missing": missing, "unexpected": unexpected}

    async def set_global_steps(self, global_steps: int) -> None:
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
        while self._queue or (self._drainer is not None and not self._drainer.done()):
            await asyncio.sleep(0.01)

    async def start_profile(self, **_: Any) -> None:
        return None

    async def stop_profile(self) -> None:
        return None


class HFReplica(RolloutReplica):
    """One ``HFRolloutServer`` actor per replica (the CPU stand-in for a vLLM/SGLang server)."""

    async def launch_servers(self) -> None:
        name = _server_name(self.replica_rank, self.name_suffix)
        server = (
            ray.remote(HFRolloutServer)
            .options(name=name, max_concurrency=self.max_concurrency, num_cpus=0)
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
