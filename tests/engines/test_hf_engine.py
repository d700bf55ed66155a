"""HFEngine: batching of concurrent requests, real logprobs, sampling controls, stop tokens."""

import asyncio

import pytest
import torch

from turngym.engines.engine import EngineRequestError, SamplingParams


def _prompt(tokenizer, text="Guess a number between 1 and 20."):
    return tokenizer.apply_chat_template(
        [{"role": "user", "content": text}], add_generation_prompt=True, tokenize=True, return_dict=False
    )


def _reference_logprobs(engine, prompt, generated, temperature=1.0):
    with torch.no_grad():
        logits = engine.model(torch.tensor([prompt + generated])).logits[0].float()
    scaled = logits[len(prompt) - 1 : -1] / temperature
    return torch.log_softmax(scaled, -1).gather(1, torch.tensor(generated)[:, None]).squeeze(1)


def test_concurrent_requests_are_batched_with_exact_logprobs(hf_engine, tokenizer):
    base = _prompt(tokenizer)
    prompts = [base[: len(base) - (i % 4)] for i in range(12)]  # ragged: exercises left padding
    before = hf_engine.stats.batches

    async def run():
        return await asyncio.gather(
            *[
                hf_engine.generate(
                    f"r{i}",
                    prompt_ids=p,
                    sampling_params={"temperature": 0.7, "max_tokens": 12, "seed": i},
                )
                for i, p in enumerate(prompts)
            ]
        )

    outs = asyncio.run(run())
    assert hf_engine.stats.batches - before == 1, "12 concurrent requests should share one batch"
    for p, o in zip(prompts, outs, strict=True):
        assert 1 <= len(o.token_ids) <= 12 and len(o.log_probs) == len(o.token_ids)
        assert o.stop_reason in ("completed", "length")
        ref = _reference_logprobs(hf_engine, p, o.token_ids, temperature=0.7)
        assert torch.allclose(ref, torch.tensor(o.log_probs), atol=1e-4)


def test_greedy_is_deterministic_and_matches_argmax(hf_engine, tokenizer):
    prompt = _prompt(tokenizer)

    async def run():
        return await hf_engine.generate(
            "g", prompt_ids=prompt, sampling_params={"temperature": 0, "max_new_tokens": 8}
        )

    a, b = asyncio.run(run()), asyncio.run(run())
    assert a.token_ids == b.token_ids
    ids = list(prompt)
    for t in a.token_ids:
        with torch.no_grad():
            nxt = int(hf_engine.model(torch.tensor([ids])).logits[0, -1, : hf_engine.valid_vocab].argmax())
        assert nxt == t
        ids.append(t)


def test_seed_reproduces_and_differs(hf_engine, tokenizer):
    prompt = _prompt(tokenizer)

    def gen(seed):
        sp = {"temperature": 1.0, "max_new_tokens": 16, "sampling_seed": seed}
        return asyncio.run(hf_engine.generate("s", prompt_ids=prompt, sampling_params=sp)).token_ids

    assert gen(3) == gen(3)
    assert gen(3) != gen(4)


def test_top_k_one_is_greedy(hf_engine, tokenizer):
    prompt = _prompt(tokenizer)

    async def run():
        greedy = await hf_engine.generate(
            "a", prompt_ids=prompt, sampling_params={"temperature": 0, "max_new_tokens": 6}
        )
        topk = await hf_engine.generate(
            "b", prompt_ids=prompt, sampling_params={"temperature": 1.0, "top_k": 1, "max_new_tokens": 6}
        )
        nucleus = await hf_engine.generate(
            "c", prompt_ids=prompt, sampling_params={"temperature": 1.0, "top_p": 1e-6, "max_new_tokens": 6}
        )
        return greedy, topk, nucleus

    greedy, topk, nucleus = asyncio.run(run())
    assert greedy.token_ids == topk.token_ids == nucleus.token_ids


def test_stop_token_ids_end_generation_with_the_stop_token_kept(hf_engine, tokenizer):
    prompt = _prompt(tokenizer)
    free = asyncio.run(
        hf_engine.generate("f", prompt_ids=prompt, sampling_params={"temperature": 0, "max_new_tokens": 10})
    )
    stop_at = free.token_ids[3]
    first = free.token_ids.index(stop_at)
    out = asyncio.run(
        hf_engine.generate(
            "s",
            prompt_ids=prompt,
            sampling_params={"temperature": 0, "max_new_tokens": 10, "stop_token_ids": [stop_at]},
        )
    )
    assert out.token_ids == free.token_ids[: first + 1]
    assert out.stop_reason == "completed"


def test_bad_prompts_are_request_errors(hf_engine):
    with pytest.raises(EngineRequestError):
        asyncio.run(hf_engine.generate("x", prompt_ids=[], sampling_params={}))
    with pytest.raises(EngineRequestError):
        asyncio.run(hf_engine.generate("x", prompt_ids=[10**9], sampling_params={}))
    for bad in (-1, hf_engine.vocab_size):
        with pytest.raises(EngineRequestError, match=f"outside the vocabulary: \\[{bad}\\]"):
            asyncio.run(hf_engine.generate("x", prompt_ids=[5, bad, 6], sampling_params={}))


def test_sampling_params_accept_verl_and_sglang_names():
    a = SamplingParams.from_dict(
        {"max_tokens": 5, "top_k": -1, "seed": 1, "logprobs": True, "repetition_penalty": 1.0}
    )
    b = SamplingParams.from_dict({"max_new_tokens": 5, "top_k": 0, "sampling_seed": 1})
    assert a == b and a.top_k == -1 and a.max_new_tokens == 5


def test_requests_arriving_mid_decode_join_the_running_batch(hf_engine, tokenizer):
    long_prompt = _prompt(tokenizer, "Play wordle: guess the five-letter word in six tries. " * 3)
    base = _prompt(tokenizer)
    first_sampling = {"temperature": 1.0, "max_new_tokens": 120, "ignore_eos": True, "seed": 1}

    async def run():
        before = hf_engine.stats.batches
        first = asyncio.ensure_future(
            hf_engine.generate("long", prompt_ids=base, sampling_params=first_sampling)
        )
        while hf_engine.stats.batches == before:  # until the first request is decoding
            await asyncio.sleep(0)
        # One shorter and one longer than the running cache: both sides of the left padding.
        late = await asyncio.gather(
            *[
                hf_engine.generate(
                    f"late{i}", prompt_ids=p, sampling_params={"temperature": 0.8, "max_tokens": 4}
                )
                for i, p in enumerate([base[:10], long_prompt])
            ]
        )
        assert not first.done(), "late requests must not wait for the running generation to end"
        return await first, late

    first, late = asyncio.run(run())
    assert len(first.token_ids) == 120 and first.stop_reason == "length"
    for prompt, out, temperature in [
        (base, first, 1.0),
        (base[:10], late[0], 0.8),
        (long_prompt, late[1], 0.8),
    ]:
        ref = _reference_logprobs(hf_engine, prompt, out.token_ids, temperature=temperature)
        assert torch.allclose(ref, torch.tensor(out.log_probs), atol=1e-4)


def test_load_weights_replaces_the_weights_in_place(model_path, tokenizer):
    from turngym.engines.hf_engine import HFEngine

    engine = HFEngine(model_path)
    prompt = _prompt(tokenizer)
    model = engine.model
    zeros = {k: torch.zeros_like(v) for k, v in model.state_dict().items()}

    async def run():
        report = await engine.load_weights(zeros.items())
        out = await engine.generate(
            "z", prompt_ids=prompt, sampling_params={"temperature": 1.0, "max_tokens": 4}
        )
        return report, out

    report, out = asyncio.run(run())
    assert engine.model is model and engine.weight_version == 1
    assert report["missing"] == [] and report["unexpected"] == [] and report["loaded"] == len(zeros)
    # An all-zero model gives every (real) token the same probability.
    assert all(abs(lp + torch.log(torch.tensor(float(engine.valid_vocab)))) < 1e-4 for lp in out.log_probs)


def test_mixed_lengths_prefill_in_groups_and_match_generate_greedy(model_path, tokenizer):
    """A multi-turn mix (prompts of 10 to ~200 tokens, own budgets): grouped prefills, the same greedy
    tokens as transformers' `generate` on each prompt alone, and the same as one padded prefill."""
    from turngym.engines.hf_engine import HFEngine

    grouped = HFEngine(model_path)
    padded = HFEngine(grouped.model, grouped.tokenizer, max_prefill_padding=float("inf"))
    base = _prompt(tokenizer, "Play wordle: guess the five-letter word in six tries. " * 8)
    prompts = [base[: 10 + 37 * i] for i in range(6)]
    budgets = [3, 9, 5, 12, 7, 4]

    def run(engine):
        async def go():
            return await asyncio.gather(
                *[
                    engine.generate(
                        f"m{i}", prompt_ids=p, sampling_params={"temperature": 0, "max_tokens": n}
                    )
                    for i, (p, n) in enumerate(zip(prompts, budgets, strict=True))
                ]
            )

        return [o.token_ids for o in asyncio.run(go())]

    got = run(grouped)
    assert grouped.stats.batches == 1 and grouped.stats.prefills > 1
    assert run(padded) == got and padded.stats.prefills == 1
    assert grouped.stats.padded_prompt_tokens < 0.7 * padded.stats.padded_prompt_tokens
    assert grouped.stats.padded_prompt_tokens <= 1.25 * grouped.stats.prompt_tokens
    for p, n, tokens in zip(prompts, budgets, got, strict=True):
        with torch.inference_mode():
            ref = grouped.model.generate(
                torch.tensor([p]), max_new_tokens=n, do_sample=False, eos_token_id=grouped.eos_token_ids[0]
            )
        ref = ref[0, len(p) :].tolist()
        assert tokens == ref[: len(tokens)] and (len(tokens) == n or tokens[-1] in grouped.eos_token_ids)


def test_bench_runs_and_fp32_engines_match_generate(model_path):
    """bench/hf_engine.py on the embedded model: every engine row, the ratios, and greedy tokens equal."""
    import os
    import re
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    cmd = [sys.executable, str(root / "bench" / "hf_engine.py"), "--model", str(model_path)]
    cmd += ["--equal", "2x16x4", "--mix", "3", "--no-bf16"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300, check=True).stdout
    assert "torch threads 1" in out and "float32 matmul GFLOP/s" in out
    rows = re.findall(
        r"(HFEngine(?: one prefill)?) .*?([\d.]+)x generate; same greedy tokens in (\d+)/(\d+)", out
    )
    assert len(rows) == 4, out  # two engines x two cases
    assert all(same == total for _, _, same, total in rows), out
    assert out.count("% of the float32 matmul bound") == 6


def _turns(engine, prompts, follow_ups, temperature=0.0, max_tokens=6):
    """Two turns per prompt: generate, then prompt + the generated ids + a follow-up, generated again."""

    params = {"temperature": temperature, "max_tokens": max_tokens}

    async def turn(tag, batch):
        return await asyncio.gather(
            *[
                engine.generate(f"{tag}{i}", prompt_ids=p, sampling_params={**params, "seed": i})
                for i, p in enumerate(batch)
            ]
        )

    async def go():
        first = await turn("a", prompts)
        second_prompts = [p + o.token_ids + f for p, o, f in zip(prompts, first, follow_ups, strict=True)]
        return second_prompts, first, await turn("b", second_prompts)

    return asyncio.run(go())


def test_next_turn_reuses_the_prefix_and_matches_a_whole_prefill(model_path, tokenizer):
    """The second turn of each episode prefills only what was added: same greedy tokens and logprobs
    (within float tolerance) as an engine without the cache, and as the model on the whole sequence."""
    from turngym.engines.hf_engine import HFEngine

    cached = HFEngine(model_path, seed=0)
    plain = HFEngine(cached.model, cached.tokenizer, prefix_cache_tokens=0)
    base = _prompt(tokenizer, "Play wordle: guess the five-letter word in six tries. " * 3)
    prompts = [base[: 20 + 13 * i] for i in range(5)]  # ragged prefixes
    follow = [_prompt(tokenizer, "Feedback: " + "x" * (3 * i + 1))[1:] for i in range(5)]  # ragged suffixes
    p2, _, got = _turns(cached, prompts, follow)
    _, _, want = _turns(plain, prompts, follow)
    assert cached.stats.reused_prompt_tokens > 0 and cached.prefix_cache.hits == 5
    assert plain.stats.reused_prompt_tokens == 0
    assert cached.stats.padded_prompt_tokens < plain.stats.padded_prompt_tokens
    for p, g, w in zip(p2, got, want, strict=True):
        assert g.token_ids == w.token_ids
        assert torch.allclose(torch.tensor(g.log_probs), torch.tensor(w.log_probs), atol=1e-4)
        ref = _reference_logprobs(cached, p, g.token_ids, temperature=1.0)
        assert torch.allclose(ref, torch.tensor(g.log_probs), atol=1e-4)


def test_sampled_turns_with_the_prefix_cache_have_exact_logprobs(model_path, tokenizer):
    """Sampled second turns mixed with requests that miss the cache, in one admission."""
    from turngym.engines.hf_engine import HFEngine

    engine = HFEngine(model_path, seed=0)
    base = _prompt(tokenizer, "Guess a number between 1 and 20. " * 4)
    prompts = [base[: 15 + 9 * i] for i in range(4)]
    follow = [_prompt(tokenizer, f"Too low {i}")[1:] for i in range(4)]
    p2, _, second = _turns(engine, prompts, follow, temperature=0.8, max_tokens=8)
    assert engine.prefix_cache.hits == 4

    async def mixed():
        fresh = [base[:30], base[:44]]
        reqs = [(f"m{i}", p) for i, p in enumerate(fresh)]
        return await asyncio.gather(
            *[
                engine.generate(rid, prompt_ids=p, sampling_params={"temperature": 0.8, "max_tokens": 8})
                for rid, p in reqs
            ]
        ), fresh

    outs, fresh = asyncio.run(mixed())
    for p, o in [*zip(p2, second, strict=True), *zip(fresh, outs, strict=True)]:
        ref = _reference_logprobs(engine, p, o.token_ids, temperature=0.8)
        assert torch.allclose(ref, torch.tensor(o.log_probs), atol=1e-4)


def test_a_weight_load_clears_the_prefix_cache(model_path, tokenizer):
    from turngym.engines.hf_engine import HFEngine

    engine = HFEngine(model_path, seed=0)
    _turns(engine, [_prompt(tokenizer)], [[5, 6]])
    assert len(engine.prefix_cache) == 2  # both turns; the second waits for a third turn
    state = {k: v.clone() for k, v in engine.model.state_dict().items()}
    asyncio.run(engine.load_weights(state))
    assert len(engine.prefix_cache) == 0 and engine.prefix_cache.tokens == 0


def test_prefix_cache_keeps_its_token_cap_and_takes_the_longest_prefix():
    from turngym.engines.prefix_cache import PrefixCache

    cache = PrefixCache(max_tokens=10)
    cache.store([1, 2], ["k"], ["v"])
    cache.store([1, 2, 3, 4], ["k"], ["v"])
    assert cache.find([1, 2, 3, 4, 5]).tokens == [1, 2, 3, 4]
    assert cache.find([1, 2, 3, 4]).tokens == [1, 2]  # a strict prefix only
    assert cache.find([7, 8, 9]) is None and cache.hits == 2
    cache.find([1, 2, 3])  # [1, 2] is now the most recently used
    cache.store(list(range(5)), ["k"], ["v"])  # 11 > 10: the least recently used entry goes
    assert cache.find([1, 2, 3, 4, 5]).tokens == [1, 2] and cache.tokens == 7
    cache.store(list(range(100, 106)), ["k"], ["v"])  # 13 > 10: range(5) goes, [1, 2] was used since
    assert len(cache) == 2 and cache.tokens == 8 and cache.find(list(range(7))) is None
    cache.store(list(range(11)), ["k"], ["v"])  # longer than the cap: not kept
    assert cache.tokens == 8
    with pytest.raises(ValueError, match="max_tokens"):
        PrefixCache(-1)
