"""HFEngine: an in-process transformers model that batches concurrent `generate` calls.

It is turngym's one sampler on CPU: `rollout.eval`/`rollout.collect` use it directly and the
trainer's `hf` rollout server (`turngym/engines/hf_rollout.py`) is a Ray actor around it.

Continuous batching without timers: one worker thread runs forward pass after forward pass while
any row decodes, with a KV cache; requests (and weight loads) that queued during a forward are
taken when it ends: new requests are prefilled (left-padded) and joined to the running rows, and
finished rows leave the cache at once. The event loop (env steps, HTTP) only queues requests and
receives results, so it keeps running meanwhile, and a weight load never lands inside a forward.

Reported logprobs are those of the sampled token under the temperature-scaled distribution before
top-k/top-p truncation (what an actor recomputes at the same temperature); greedy requests report the
untempered logprobs.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from collections import deque
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from turngym.engines.engine import (
    EngineError,
    EngineRequestError,
    Generation,
    SamplingParams,
    sampling_problem,
)
from turngym.engines.gqa_attention import use_gqa_attention
from turngym.engines.prefix_cache import PrefixCache, PrefixEntry


@dataclass
class _Request:
    prompt_ids: list[int]
    params: SamplingParams
    future: asyncio.Future
    request_id: str = ""


@dataclass
class _Running:
    """Rows decoding together, in KV-cache order, with what each has generated so far."""

    reqs: list[_Request]
    cache: Any
    attn: Any  # [rows, cache length]: 1 where the row holds a real token
    next_pos: Any  # [rows, 1]: position id of each row's next token
    logits: Any  # [rows, vocab]: each row's next-token logits
    tokens: list[list[int]]
    logps: list[list[float]]
    stops: list[set[int]]
    gens: list[Any]
    mergeable: bool

    def select(self, rows: list[int]) -> None:
        """Keep only `rows`; drop cache columns no kept row uses (left padding of finished rows)."""
        import torch

        idx = torch.tensor(rows, dtype=torch.long, device=self.attn.device)
        self.cache.batch_select_indices(idx)
        self.attn, self.next_pos = self.attn[idx], self.next_pos[idx]
        for name in ("reqs", "tokens", "logps", "stops", "gens"):
            values = getattr(self, name)
            setattr(self, name, [values[i] for i in rows])
        if self.mergeable:
            first = int(self.attn.any(0).int().argmax())
            if first > 0:  # keeps the cache as long as the longest live row, not the longest ever
                for layer in self.cache.layers:
                    layer.keys, layer.values = layer.keys[:, :, first:], layer.values[:, :, first:]
                self.attn = self.attn[:, first:]


@dataclass
class EngineStats:
    """Where an engine's time went (seconds) and how much it produced."""

    batches: int = 0  # admissions: groups of requests joined to the running rows together
    prefills: int = 0  # prefill forward passes (an admission is split by prompt length)
    padded_prompt_tokens: int = 0  # prompt slots the prefills computed, padding included
    requests: int = 0
    prompt_tokens: int = 0
    generated_tokens: int = 0
    reused_prompt_tokens: int = 0  # prompt tokens whose key/values came from the prefix cache
    forward_seconds: float = 0.0
    batch_sizes: list[int] = field(default_factory=list)


class HFEngine:
    """Batched generation with a transformers causal LM; `generate` follows the engine contract.

    Concurrent `generate` calls share forward passes (continuous batching on one worker thread), so
    many episodes can await it at once from one event loop.

    Args:
        model_or_path: A loaded model, a Hugging Face model directory, a model name
            (`turngym.engines.named_models`: "embedded", "smollm2-135m-instruct") or "gguf:<file>";
            None: the embedded tiny model, built on first use and cached.
        tokenizer: The tokenizer (object or directory); None: the one beside the model directory.
        device: The torch device the model runs on.
        max_batch_size: Rows decoded together at most; more requests wait for a free row.
        max_prefill_padding: Prompts admitted together are prefilled in groups of similar length, at
            most this share of a group's slots padding (inf: one padded prefill for all of them).
        max_prefill_tokens: Slots one prefill group holds at most (bounds the activations), unless one
            prompt alone is longer.
        default_max_new_tokens: The token budget of a request whose sampling params set none.
        seed: Seeds the sampler; a request's own `seed`/`sampling_seed` overrides it.
        dtype: The torch dtype a model loaded from a path gets (default float32).
        prefix_cache_tokens: Key/value tokens kept from finished generations, reused when an
            episode's next prompt extends its last one (0 turns the reuse off).

    Example:
        >>> import asyncio
        >>> from rollout import HFEngine
        >>> engine = HFEngine()  # the embedded tiny model  # doctest: +SKIP
        >>> prompt = engine.tokenizer.encode("Guess a number between 1 and 100:")  # doctest: +SKIP
        >>> out = asyncio.run(
        ...     engine.generate("r0", prompt_ids=prompt, sampling_params={"max_tokens": 8, "temperature": 0})
        ... )  # doctest: +SKIP
        >>> len(out.token_ids) <= 8, len(out.log_probs) == len(out.token_ids)  # doctest: +SKIP
        (True, True)
    """

    def __init__(
        self,
        model_or_path: Any = None,
        tokenizer: Any = None,
        device: str = "cpu",
        *,
        max_batch_size: int = 64,
        max_prefill_padding: float = 0.25,
        max_prefill_tokens: int = 4096,
        default_max_new_tokens: int = 128,
        seed: int = 0,
        dtype: Any = None,
        prefix_cache_tokens: int = 32768,
    ):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if model_or_path is None:
            from turngym.engines.embedded_model import build_embedded_model

            model_or_path = build_embedded_model()
        if isinstance(model_or_path, str | os.PathLike):
            from turngym.engines.named_models import is_model_name, resolve_named_model

            # A model name or gguf:<file> loads from its converted, cached directory.
            path = resolve_named_model(model_or_path) if is_model_name(model_or_path) else Path(model_or_path)
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
        # Left padding means every forward has a mask, and transformers' sdpa then copies each shared
        # key/value head per query head; this attention does not (turngym/engines/gqa_attention.py).
        use_gqa_attention(self.model)
        self.tokenizer = tokenizer
        self.max_batch_size = max_batch_size
        # Prompts admitted together are prefilled in groups of similar length: a group's padding is at
        # most this share of its slots, and a group holds at most `max_prefill_tokens` slots (bounds the
        # activations) unless one prompt alone is longer. inf: one padded prefill for all of them.
        self.max_prefill_padding = float(max_prefill_padding)
        self.max_prefill_tokens = int(max_prefill_tokens)
        self._mergeable: bool | None = None  # whether this model's KV cache can be left-padded and stacked
        # A finished generation's key/values, reused when the episode's next prompt extends it (only
        # the decode thread touches it; a weight load clears it).
        self.prefix_cache = PrefixCache(prefix_cache_tokens)
        self.default_max_new_tokens = default_max_new_tokens
        self.max_positions = int(getattr(self.model.config, "max_position_embeddings", 1 << 30))
        # Stop at any end-of-sequence id the generation config, model config or tokenizer names, as
        # vLLM and SGLang do (chat models often list the end-of-turn token in only one of them).
        gen_cfg = getattr(self.model, "generation_config", None)
        eos: list[int] = []
        for value in (
            getattr(gen_cfg, "eos_token_id", None),
            getattr(self.model.config, "eos_token_id", None),
            getattr(tokenizer, "eos_token_id", None) if tokenizer is not None else None,
        ):
            for v in value if isinstance(value, list | tuple) else [value]:
                if v is not None and int(v) not in eos:
                    eos.append(int(v))
        self.eos_token_ids: tuple[int, ...] = tuple(eos)
        pad = getattr(tokenizer, "pad_token_id", None) if tokenizer is not None else None
        self.pad_token_id = int(
            pad if pad is not None else (self.eos_token_ids[0] if self.eos_token_ids else 0)
        )
        vocab = self.vocab_size = int(self.model.config.vocab_size)
        # Rows of a vocab padded for speed never hold real tokens; never sample them.
        self.valid_vocab = min(vocab, len(tokenizer)) if tokenizer is not None else vocab
        self._generator = torch.Generator(device="cpu").manual_seed(seed)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hf-engine")
        # Shared with the decode thread, always under `_lock`: requests and weight loads waiting for
        # the current forward pass to end, and whether the decode loop is running.
        self._lock = threading.Lock()
        self._inbox: deque[_Request] = deque()
        self._loads: deque[tuple[dict[str, Any], asyncio.Future]] = deque()
        self._decoding = False
        self._active: list[_Request] = []  # rows of the running batch (for close)
        self._closed = False
        self.weight_version = 0  # how many times `load_weights` replaced the weights
        self.stats = EngineStats()

    # ----- the contract --------------------------------------------------------------------------
    async def generate(
        self, request_id: str, *, prompt_ids: list[int], sampling_params: dict[str, Any] | None = None
    ) -> Generation:
        """Queue one request and wait for its completion (batched with concurrent ones).

        Args:
            request_id: Names the request (logs, and which episode a prefix-cache entry belongs to).
            prompt_ids: The prompt's token ids, all inside the vocabulary.
            sampling_params: verl- or SGLang-style keys (`max_tokens`/`max_new_tokens`, `temperature`,
                `top_p`, `top_k`, `stop`, `stop_token_ids`, `seed`); temperature 0 is greedy.

        Returns:
            The generated ids (stop token included), the logprob of each, and the stop reason
            ("completed" or "length").

        Raises:
            EngineError: The engine is closed, or the prompt is empty, holds ids outside the
                vocabulary or leaves no room in the model's context.
        """
        if self._closed:
            raise EngineError("HFEngine is closed")
        problem = sampling_problem(sampling_params or {})
        if problem is not None:
            raise EngineRequestError(problem)
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
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        with self._lock:
            self._inbox.append(_Request(prompt, params, future, str(request_id)))
        # call_soon: the decode loop starts after the other coroutines of this loop iteration (e.g.
        # a gather of episodes) have queued their requests, so they share one prefill.
        loop.call_soon(self._start_decoding)
        return await future

    async def close(self) -> None:
        """Stop decoding and the worker thread; waiting and running requests fail with EngineError."""
        with self._lock:
            self._closed = True
            waiting = list(self._inbox) + list(self._active)
            loads = list(self._loads)
            self._inbox.clear()
            self._loads.clear()
        for req in waiting:
            if not req.future.done():
                req.future.set_exception(EngineError("HFEngine closed"))
        for _, future in loads:
            if not future.done():
                future.set_exception(EngineError("HFEngine closed"))
        self._executor.shutdown(wait=False)

    # ----- weights -------------------------------------------------------------------------------
    async def load_weights(self, weights: Mapping[str, Any] | Iterable[tuple[str, Any]]) -> dict[str, Any]:
        """Load new weights into the model in place, between two forward passes; report what matched."""
        if self._closed:
            raise EngineError("HFEngine is closed")
        state = dict(weights.items() if isinstance(weights, Mapping) else weights)
        future = asyncio.get_running_loop().create_future()
        with self._lock:
            self._loads.append((state, future))
        self._start_decoding()
        return await future

    def _load_state(self, state: dict[str, Any]) -> dict[str, Any]:
        import torch

        own = self.model.state_dict()
        usable = {k: v.to(device=own[k].device, dtype=own[k].dtype) for k, v in state.items() if k in own}
        with torch.no_grad():
            result = self.model.load_state_dict(usable, strict=False)
        self.prefix_cache.clear()
        tied = {"lm_head.weight"} if getattr(self.model.config, "tie_word_embeddings", False) else set()
        self.weight_version += 1
        return {
            "loaded": len(usable),
            "missing": sorted(set(result.missing_keys) - tied),
            "unexpected": sorted(k for k in state if k not in own),
        }

    # ----- batching ------------------------------------------------------------------------------
    @property
    def busy(self) -> bool:
        """True while requests wait or decode."""
        with self._lock:
            return self._decoding or bool(self._inbox)

    def _start_decoding(self) -> None:
        with self._lock:
            if self._decoding or self._closed or not (self._inbox or self._loads):
                return
            self._decoding = True
        self._executor.submit(self._decode_loop)

    def _decode_loop(self) -> None:
        """The worker thread: one forward pass after another while any row runs.

        Between two forwards it applies queued weight loads and admits queued requests (continuous
        batching without timers: a request never waits for a batch of long generations to end).
        Results go back to each request's own event loop.
        """
        running: _Running | None = None
        while True:
            with self._lock:
                loads = list(self._loads)
                self._loads.clear()
                admit = self._admit(running)
                if self._closed or (running is None and not admit and not loads):
                    self._decoding = False
                    self._active = []
                    return
                self._active = (running.reqs if running else []) + admit
            for state, future in loads:
                _deliver(future, *_outcome(self._load_state, state))
            if running is None and not admit:
                continue
            dropped = {i for i, r in enumerate(running.reqs) if r.future.done()} if running else set()
            try:
                running, done = self._step(running, admit, dropped)
            except Exception as exc:  # a failed forward fails its requests, never the engine
                error = EngineError(f"generation failed: {exc!r}")
                for r in (running.reqs if running else []) + admit:
                    _deliver(r.future, None, error)
                running, done = None, []
            for r, gen in done:
                _deliver(r.future, gen, None)

    def _admit(self, running: _Running | None) -> list[_Request]:
        if running is not None and not running.mergeable:
            return []  # caches that cannot be joined (sliding windows, ...) wait for the batch to end
        room = self.max_batch_size - (len(running.reqs) if running else 0)
        admit: list[_Request] = []
        while self._inbox and len(admit) < room:
            req = self._inbox.popleft()
            if not req.future.done():
                admit.append(req)
        return admit

    def _step(
        self, running: _Running | None, admit: list[_Request], dropped: set[int]
    ) -> tuple[_Running | None, list[tuple[_Request, Generation]]]:
        """Prefill `admit` into the running batch, sample one token per row, run the next forward."""
        import torch

        t0 = time.perf_counter()
        with torch.inference_mode():
            if admit:
                self.stats.batches += 1
                self.stats.batch_sizes.append(len(admit))
                admit, hits = self._find_prefixes(admit)
                groups = [(self._prefill_cached, hits)] if hits else []
                groups += [(self._prefill, group) for group in self._prefill_groups(admit)] if admit else []
                for prefill, group in groups:
                    new = prefill(group)
                    running = new if running is None else self._merge(running, new)
            running, done = self._advance(running, dropped)
        st = self.stats
        st.forward_seconds += time.perf_counter() - t0
        st.generated_tokens += sum(len(g.token_ids) for _, g in done)
        return running, done

    def _prefill_groups(self, admit: list[_Request]) -> list[list[_Request]]:
        """`admit` split into prefill groups of similar prompt length (longest first).

        One left-padded prefill of a multi-turn mix computes the longest prompt's length for every row:
        with prompts of 50 to 600 tokens that was about half padding, and the prefill is most of such a
        batch's work. Splitting costs a forward pass per group; the matmuls stay wide (rows x length).
        """
        if len(admit) == 1 or self.max_prefill_padding == float("inf") or not self._cache_mergeable():
            return [admit]  # groups are joined by `_merge`, which only plain key/value caches allow
        order = sorted(admit, key=lambda r: len(r.prompt_ids), reverse=True)
        groups: list[list[_Request]] = []
        real = width = 0
        for req in order:
            n = len(req.prompt_ids)
            if groups:
                slots = width * (len(groups[-1]) + 1)
                padding = 1 - (real + n) / slots
                if padding <= self.max_prefill_padding and slots <= self.max_prefill_tokens:
                    groups[-1].append(req)
                    real += n
                    continue
            groups.append([req])
            real = width = n
        return groups

    def _cache_mergeable(self) -> bool:
        if self._mergeable is None:
            from transformers import DynamicCache

            self._mergeable = _plain_layers(DynamicCache(config=self.model.config))
        return self._mergeable

    def _prefill(self, batch: list[_Request]) -> _Running:
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
        st = self.stats
        st.prefills += 1
        st.requests += n
        st.padded_prompt_tokens += n * width
        st.prompt_tokens += sum(len(r.prompt_ids) for r in batch)
        return self._running(batch, cache, attn, positions[:, -1:] + 1, logits)

    def _find_prefixes(
        self, admit: list[_Request]
    ) -> tuple[list[_Request], list[tuple[_Request, PrefixEntry]]]:
        """Split `admit` into requests to prefill whole and those whose prompt extends a cached prefix."""
        if not self.prefix_cache.max_tokens or not self._cache_mergeable():
            return admit, []
        rest, hits = [], []
        for req in admit:
            entry = self.prefix_cache.find(req.prompt_ids)
            if entry is None:
                rest.append(req)
            else:
                hits.append((req, entry))
        return rest, hits

    def _prefill_cached(self, batch: list[tuple[_Request, PrefixEntry]]) -> _Running:
        """Prefill only what each prompt adds to its cached prefix.

        Each row is laid out as [padding][cached prefix][padding][new tokens], the padding masked out;
        the new tokens take the positions after their prefix, as they would in one whole prefill.
        """
        import torch
        import torch.nn.functional as F
        from transformers import DynamicCache

        dev = self.device
        n = len(batch)
        lens = [len(e.tokens) for _, e in batch]
        width_p = max(lens)
        suffixes = [r.prompt_ids[len(e.tokens) :] for r, e in batch]
        width_s = max(len(x) for x in suffixes)
        input_ids = torch.full((n, width_s), self.pad_token_id, dtype=torch.long)
        attn = torch.zeros((n, width_p + width_s), dtype=torch.long)
        for i, (suffix, k) in enumerate(zip(suffixes, lens, strict=True)):
            input_ids[i, width_s - len(suffix) :] = torch.tensor(suffix)
            attn[i, width_p - k : width_p] = 1
            attn[i, width_p + width_s - len(suffix) :] = 1
        input_ids, attn = input_ids.to(dev), attn.to(dev)
        prefix_len = torch.tensor(lens, dtype=torch.long, device=dev)[:, None]
        positions = prefix_len + (attn[:, width_p:].cumsum(-1) - 1).clamp(min=0)
        cache = DynamicCache(config=self.model.config)
        for layer_idx, layer in enumerate(cache.layers):
            keys = torch.stack(
                [
                    F.pad(e.keys[layer_idx], (0, 0, width_p - k, 0))
                    for (_, e), k in zip(batch, lens, strict=True)
                ]
            )
            values = torch.stack(
                [
                    F.pad(e.values[layer_idx], (0, 0, width_p - k, 0))
                    for (_, e), k in zip(batch, lens, strict=True)
                ]
            )
            layer.update(keys.to(dev), values.to(dev))
        logits = self._next_logits(input_ids, attn, positions, cache, logits_to_keep=1)
        reqs = [r for r, _ in batch]
        st = self.stats
        st.prefills += 1
        st.requests += n
        st.padded_prompt_tokens += n * width_s
        st.prompt_tokens += sum(len(r.prompt_ids) for r in reqs)
        st.reused_prompt_tokens += sum(lens)
        return self._running(reqs, cache, attn, positions[:, -1:] + 1, logits)

    def _running(self, batch: list[_Request], cache: Any, attn: Any, next_pos: Any, logits: Any) -> _Running:
        import torch

        params = [r.params for r in batch]
        return _Running(
            reqs=list(batch),
            cache=cache,
            attn=attn,
            next_pos=next_pos,
            logits=logits,
            tokens=[[] for _ in batch],
            logps=[[] for _ in batch],
            stops=[
                set(p.stop_token_ids) | (set() if p.ignore_eos else set(self.eos_token_ids)) for p in params
            ],
            gens=[
                torch.Generator(device="cpu").manual_seed(p.seed) if p.seed is not None else None
                for p in params
            ],
            mergeable=_plain_layers(cache),
        )

    def _merge(self, run: _Running, new: _Running) -> _Running:
        """Stack `new`'s rows under `run`'s, left-padding the shorter KV cache (masked out)."""
        import torch
        import torch.nn.functional as F

        la, lb = run.attn.shape[1], new.attn.shape[1]
        width = max(la, lb)
        for a, b in zip(run.cache.layers, new.cache.layers, strict=True):
            a.keys = torch.cat([F.pad(a.keys, (0, 0, width - la, 0)), F.pad(b.keys, (0, 0, width - lb, 0))])
            a.values = torch.cat(
                [F.pad(a.values, (0, 0, width - la, 0)), F.pad(b.values, (0, 0, width - lb, 0))]
            )
        run.attn = torch.cat([F.pad(run.attn, (width - la, 0)), F.pad(new.attn, (width - lb, 0))])
        run.next_pos = torch.cat([run.next_pos, new.next_pos])
        run.logits = torch.cat([run.logits, new.logits])
        for name in ("reqs", "tokens", "logps", "stops", "gens"):
            getattr(run, name).extend(getattr(new, name))
        return run

    def _advance(
        self, run: _Running, dropped: set[int]
    ) -> tuple[_Running | None, list[tuple[_Request, Generation]]]:
        """Sample every row's next token; finished rows leave; the rest get their next logits."""
        import torch

        tok, lp = self._sample(run.logits, [r.params for r in run.reqs], run.gens)
        done: list[tuple[_Request, Generation]] = []
        keep: list[int] = []
        for i, req in enumerate(run.reqs):
            if i in dropped:  # cancelled by its caller
                continue
            tokens = run.tokens[i]
            tokens.append(tok[i])
            run.logps[i].append(lp[i])
            if tok[i] in run.stops[i] or self._hit_stop_string(tokens, req.params):
                reason = "completed"
            elif len(tokens) >= req.params.max_new_tokens:
                reason = "length"
            else:
                keep.append(i)
                continue
            done.append((req, Generation(token_ids=tokens, log_probs=run.logps[i], stop_reason=reason)))
            self._keep_prefix(run, i)
        if not keep:
            return None, done
        if len(keep) < len(run.reqs):
            run.select(keep)
        dev = self.device
        step_ids = torch.tensor([[tok[i]] for i in keep], dtype=torch.long, device=dev)
        run.attn = torch.cat([run.attn, torch.ones((len(keep), 1), dtype=run.attn.dtype, device=dev)], dim=1)
        run.logits = self._next_logits(step_ids, run.attn, run.next_pos, run.cache)
        run.next_pos = run.next_pos + 1
        return run, done

    def _keep_prefix(self, run: _Running, row: int) -> None:
        """Store row `row`'s key/values (its prompt and every generated token but the last, never fed)."""
        if not self.prefix_cache.max_tokens or not run.mergeable:
            return
        req = run.reqs[row]
        tokens = req.prompt_ids + run.tokens[row][:-1]
        if len(tokens) > self.prefix_cache.max_tokens:
            return
        cols = run.attn[row].nonzero().squeeze(1)
        if len(cols) != len(tokens):  # the cache does not hold exactly these tokens: store nothing
            return
        layers = run.cache.layers
        keys = [layer.keys[row].index_select(1, cols) for layer in layers]
        values = [layer.values[row].index_select(1, cols) for layer in layers]
        self.prefix_cache.store(tokens, keys, values)

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
        # The chosen token's log-softmax without materializing the whole [rows, vocab] of them.
        picked = scaled.gather(1, chosen[:, None]).squeeze(1) - torch.logsumexp(scaled, dim=-1)
        return chosen.tolist(), picked.tolist()


def _plain_layers(cache) -> bool:
    """Plain per-layer key/value tensors can be left-padded and stacked; other layouts cannot."""
    from transformers.cache_utils import DynamicLayer

    return all(type(layer) is DynamicLayer for layer in getattr(cache, "layers", [None]))


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


def _outcome(fn, *args) -> tuple[Any, BaseException | None]:
    try:
        return fn(*args), None
    except Exception as exc:  # handed to the awaiting caller
        return None, exc


def _deliver(future: asyncio.Future, result: Any, error: BaseException | None) -> None:
    """Resolve `future` on its own event loop (from the worker thread)."""

    def resolve() -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

    with contextlib.suppress(RuntimeError):  # that event loop is closed: nobody waits any more
        future.get_loop().call_soon_threadsafe(resolve)
