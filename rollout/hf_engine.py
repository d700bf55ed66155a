"""HFEngine: an in-process transformers model that batches concurrent `generate` calls.

Requests that arrive while a batch runs wait for the next one; a background task collects the
pending requests, left-pads them, prefills once and decodes them together with a KV cache, dropping
finished rows from the cache as it goes. The forward passes run in one worker thread so the event
loop (env steps, HTTP) keeps running meanwhile.

Reported logprobs are those of the sampled token under the temperature-scaled distribution before
top-k/top-p truncation (what an actor recomputes at the same temperature); greedy requests report the
untempered logprobs.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rollout.engine import EngineError, EngineRequestError, Generation, SamplingParams


@dataclass
class _Request:
    prompt_ids: list[int]
    params: SamplingParams
    future: asyncio.Future
    request_id: str = ""


@dataclass
class EngineStats:
    """Where an engine's time went (seconds) and how much it produced."""

    batches: int = 0
    requests: int = 0
    prompt_tokens: int = 0
    generated_tokens: int = 0
    forward_seconds: float = 0.0
    batch_sizes: list[int] = field(default_factory=list)


class HFEngine:
    """Batched generation with a transformers causal LM; `generate` follows the engine contract."""

    def __init__(
        self,
        model_or_path: Any = None,
        tokenizer: Any = None,
        device: str = "cpu",
        *,
        max_batch_size: int = 64,
        default_max_new_tokens: int = 128,
        seed: int = 0,
        dtype: Any = None,
    ):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if model_or_path is None:
            from trainer.embedded_model import build_embedded_model

            model_or_path = build_embedded_model()
        if isinstance(model_or_path, str | os.PathLike):
            path = Path(model_or_path)
            model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype or torch.float32)
            if tokenizer is None:
                tokenizer = AutoTokenizer.from_pretrained(path)
            self.name = str(path)
        else:
            model = model_or_path
            self.name = getattr(getattr(model, "config", None), "_name_or_path", type(model).__name__)
        if isinstance(tokenizer, str | os.PathLike):
            tokenizer = AutoTokenizer.from_pretrained(tokenizer)
        self.device = torch.device(device)
        self.model = model.to(self.device).eval()
        self.tokenizer = tokenizer
        self.max_batch_size = max_batch_size
        self.default_max_new_tokens = default_max_new_tokens
        self.max_positions = int(getattr(self.model.config, "max_position_embeddings", 1 << 30))
        gen_cfg = getattr(self.model, "generation_config", None)
        eos = getattr(gen_cfg, "eos_token_id", None)
        if eos is None:
            eos = getattr(self.model.config, "eos_token_id", None)
        if eos is None and tokenizer is not None:
            eos = tokenizer.eos_token_id
        self.eos_token_ids: tuple[int, ...] = tuple(
            eos if isinstance(eos, list | tuple) else [eos] if eos is not None else []
        )
        pad = getattr(tokenizer, "pad_token_id", None) if tokenizer is not None else None
        self.pad_token_id = int(
            pad if pad is not None else (self.eos_token_ids[0] if self.eos_token_ids else 0)
        )
        vocab = self.vocab_size = int(self.model.config.vocab_size)
        # Rows of a vocab padded for speed never hold real tokens; never sample them.
        self.valid_vocab = min(vocab, len(tokenizer)) if tokenizer is not None else vocab
        self._generator = torch.Generator(device="cpu").manual_seed(seed)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hf-engine")
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pending: list[_Request] = []
        self._wakeup: asyncio.Event | None = None
        self._worker: asyncio.Task | None = None
        self._closed = False
        self.stats = EngineStats()

    # ----- the contract --------------------------------------------------------------------------
    async def generate(
        self, request_id: str, *, prompt_ids: list[int], sampling_params: dict[str, Any] | None = None
    ) -> Generation:
        """Queue one request and wait for its completion (batched with concurrent ones)."""
        if self._closed:
            raise EngineError("HFEngine is closed")
        params = SamplingParams.from_dict(sampling_params, self.default_max_new_tokens)
        prompt = [int(t) for t in prompt_ids]
        if not prompt:
            raise EngineRequestError("prompt_ids is empty")
        # min/max first: a per-token check through the transformers config was ~5 % of a rollout
        if min(prompt) < 0 or max(prompt) >= self.vocab_size:
            bad = [t for t in prompt if not 0 <= t < self.vocab_size]
            raise EngineRequestError(f"prompt_ids holds ids outside the vocabulary: {bad[:5]}")
        room = self.max_positions - len(prompt)
        if room <= 0:
            raise EngineRequestError(
                f"prompt of {len(prompt)} tokens exceeds the model's {self.max_positions}"
            )
        if params.max_new_tokens > room:
            params = _replace(params, max_new_tokens=room)
        self._ensure_worker()
        future = asyncio.get_running_loop().create_future()
        self._pending.append(_Request(prompt, params, future, str(request_id)))
        self._wakeup.set()
        return await future

    async def close(self) -> None:
        """Stop the batching task and the worker thread; pending requests fail with EngineError."""
        self._closed = True
        if self._worker is not None:
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._worker
        for req in self._pending:
            if not req.future.done():
                req.future.set_exception(EngineError("HFEngine closed"))
        self._pending.clear()
        self._executor.shutdown(wait=False)

    # ----- batching ------------------------------------------------------------------------------
    def _ensure_worker(self) -> None:
        loop = asyncio.get_running_loop()
        if self._loop is not loop or self._worker is None or self._worker.done():
            # A new event loop (e.g. another asyncio.run): requests of a dead loop cannot be answered.
            self._loop = loop
            self._pending = []
            self._wakeup = asyncio.Event()
            self._worker = loop.create_task(self._serve(), name="hf-engine-batcher")

    async def _serve(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self._wakeup.wait()
            self._wakeup.clear()
            # Yield once so requests issued in the same tick (e.g. a gather of episodes) join this batch.
            await asyncio.sleep(0)
            while self._pending:
                batch = self._pending[: self.max_batch_size]
                self._pending = self._pending[self.max_batch_size :]
                batch = [r for r in batch if not r.future.cancelled()]
                if not batch:
                    continue
                try:
                    results = await loop.run_in_executor(self._executor, self._run_batch, batch)
                except Exception as exc:  # a failed batch fails its requests, never the batcher
                    for r in batch:
                        if not r.future.done():
                            r.future.set_exception(EngineError(f"generation failed: {exc!r}"))
                    continue
                for r, res in zip(batch, results, strict=True):
                    if not r.future.done():
                        r.future.set_result(res)
                await asyncio.sleep(0)

    def _run_batch(self, batch: list[_Request]) -> list[Generation]:
        import torch

        t0 = time.perf_counter()
        with torch.inference_mode():
            results = self._decode(batch)
        st = self.stats
        st.forward_seconds += time.perf_counter() - t0
        st.batches += 1
        st.requests += len(batch)
        st.batch_sizes.append(len(batch))
        st.prompt_tokens += sum(len(r.prompt_ids) for r in batch)
        st.generated_tokens += sum(len(g.token_ids) for g in results)
        return results

    def _decode(self, batch: list[_Request]) -> list[Generation]:
        import torch
        from transformers import DynamicCache

        dev = self.device
        n = len(batch)
        width = max(len(r.prompt_ids) for r in batch)
        input_ids = torch.full((n, width), self.pad_token_id, dtype=torch.long)
        attn = torch.zeros((n, width), dtype=torch.long)
        for i, r in enumerate(batch):
            input_ids[i, width - len(r.prompt_ids) :] = torch.tensor(r.prompt_ids)
            attn[i, width - len(r.prompt_ids) :] = 1
        input_ids, attn = input_ids.to(dev), attn.to(dev)
        positions = (attn.cumsum(-1) - 1).clamp(min=0)
        cache = DynamicCache(config=self.model.config)
        logits = self._next_logits(input_ids, attn, positions, cache, logits_to_keep=1)
        next_pos = positions[:, -1:] + 1

        params = [r.params for r in batch]
        stops = [set(p.stop_token_ids) | (set() if p.ignore_eos else set(self.eos_token_ids)) for p in params]
        gens = [
            torch.Generator(device="cpu").manual_seed(p.seed) if p.seed is not None else None for p in params
        ]
        tokens: list[list[int]] = [[] for _ in batch]
        logps: list[list[float]] = [[] for _ in batch]
        reasons: list[str | None] = [None] * n
        active = list(range(n))  # batch rows still decoding, in cache order
        while True:
            tok, lp = self._sample(logits, [params[i] for i in active], [gens[i] for i in active])
            keep = []
            for j, i in enumerate(active):
                t = tok[j]
                tokens[i].append(t)
                logps[i].append(lp[j])
                if t in stops[i] or self._hit_stop_string(tokens[i], params[i]):
                    reasons[i] = "completed"
                elif len(tokens[i]) >= params[i].max_new_tokens:
                    reasons[i] = "length"
                else:
                    keep.append(j)
            if not keep:
                break
            step_ids = torch.tensor([[tok[j]] for j in keep], dtype=torch.long, device=dev)
            if len(keep) < len(active):
                idx = torch.tensor(keep, dtype=torch.long, device=dev)
                cache.batch_select_indices(idx)
                attn = attn[idx]
                next_pos = next_pos[idx]
                active = [active[j] for j in keep]
            attn = torch.cat([attn, torch.ones((len(active), 1), dtype=attn.dtype, device=dev)], dim=1)
            logits = self._next_logits(step_ids, attn, next_pos, cache)
            next_pos = next_pos + 1
        return [Generation(token_ids=tokens[i], log_probs=logps[i], stop_reason=reasons[i]) for i in range(n)]

    def _next_logits(self, input_ids, attn, positions, cache, **extra):
        # Prefill and every decode step must feed the model the same way (mask, explicit positions for
        # the left padding, the shared cache); only the prefill adds `logits_to_keep`.
        out = self.model(
            input_ids=input_ids,
            attention_mask=attn,
            position_ids=positions,
            past_key_values=cache,
            use_cache=True,
            **extra,
        )
        return out.logits[:, -1, :]

    def _hit_stop_string(self, tokens: list[int], params: SamplingParams) -> bool:
        if not params.stop or self.tokenizer is None:
            return False
        tail = self.tokenizer.decode(tokens[-16:], skip_special_tokens=False)
        return any(s in tail for s in params.stop)

    def _sample(self, logits, params: list[SamplingParams], gens: list) -> tuple[list[int], list[float]]:
        """Pick one token per row; return ids and their logprobs (temperature-scaled, untruncated)."""
        import torch

        logits = logits.float()
        if self.valid_vocab < logits.shape[-1]:
            logits[:, self.valid_vocab :] = float("-inf")
        temps = torch.tensor(
            [p.temperature if p.temperature > 0 else 1.0 for p in params], device=logits.device
        )
        scaled = logits / temps[:, None]
        logprobs = torch.log_softmax(scaled, dim=-1)
        greedy = [p.temperature <= 0 for p in params]
        chosen = torch.empty(len(params), dtype=torch.long, device=logits.device)
        if any(greedy):
            g_rows = torch.tensor([i for i, g in enumerate(greedy) if g], device=logits.device)
            chosen[g_rows] = logits[g_rows].argmax(-1)
        if not all(greedy):
            masked = scaled
            if any(p.top_k > 0 or p.top_p < 1.0 for p in params):
                masked = _truncate(scaled, params)
            probs = torch.softmax(masked, dim=-1)
            shared = [i for i, g in enumerate(greedy) if not g and gens[i] is None]
            if shared:
                rows = torch.tensor(shared, device=logits.device)
                chosen[rows] = (
                    torch.multinomial(probs[rows].cpu(), 1, generator=self._generator)
                    .squeeze(1)
                    .to(logits.device)
                )
            for i, g in enumerate(greedy):
                if not g and gens[i] is not None:
                    chosen[i] = torch.multinomial(probs[i].cpu(), 1, generator=gens[i]).item()
        picked = logprobs.gather(1, chosen[:, None]).squeeze(1)
        return chosen.tolist(), picked.tolist()


def _truncate(scaled, params: list[SamplingParams]):
    """Mask logits outside each row's top-k / top-p nucleus with -inf."""
    import torch

    sorted_logits, order = scaled.sort(dim=-1, descending=True)
    vocab = scaled.shape[-1]
    ks = torch.tensor([p.top_k if p.top_k > 0 else vocab for p in params], device=scaled.device)
    ps = torch.tensor([p.top_p for p in params], device=scaled.device)
    ranks = torch.arange(vocab, device=scaled.device)[None, :]
    remove = ranks >= ks[:, None]
    probs = torch.softmax(sorted_logits, dim=-1)
    before = probs.cumsum(-1) - probs  # mass strictly before each token: keep the token that crosses top_p
    remove |= before >= ps[:, None]
    remove[:, 0] = False
    sorted_logits = sorted_logits.masked_fill(remove, float("-inf"))
    return torch.empty_like(scaled).scatter_(1, order, sorted_logits)


def _replace(params: SamplingParams, **changes) -> SamplingParams:
    from dataclasses import replace

    return replace(params, **changes)
