"""HFEngine against transformers' batched `generate`: generated tokens per second on the same prompts.

Two cases, both greedy, both engines in the same run on the same model object:
1. equal: N prompts of the same length, each generating the same number of tokens (end-of-sequence
   ignored), the case a static batch is built for;
2. mix: a multi-turn rollout's requests: chat conversations of 1 to many turns (prompts of a few dozen
   to several hundred tokens), each with its own token budget and stopping at the model's end of turn.
   `generate` runs them as one left-padded batch until the last row ends (a batch has one
   `max_new_tokens`: the largest); HFEngine lets each row leave when it is done.
Only tokens a request asked for count: a `generate` row's tokens past its own end of turn or budget are
padding work.

The physical anchor: a forward pass costs about 2 x (parameters in matmuls) FLOPs per token plus the
attention term 4 x layers x context x (heads x head_dim). The FLOPs both engines had to do for the
useful tokens (prefill + decode), per second, are set against the best GFLOP/s of a torch matmul of the
model's own shapes measured in this run on the same threads: that share is how close to the compute
bound the engine runs.

Usage: .venv/bin/python bench/hf_engine.py [--model smollm2-135m-instruct | embedded | <HF dir>]
       [--equal 16x64x32] [--mix 24] [--repeats 1]
Threads: whatever OMP_NUM_THREADS says (printed); run with OMP_NUM_THREADS=1 on a shared machine.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import os
import random
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REAL_MODEL = "smollm2-135m-instruct"
WORDS = [
    "guess",
    "the",
    "number",
    "between",
    "one",
    "and",
    "a",
    "hundred",
    "higher",
    "lower",
    "correct",
    "try",
    "again",
    "your",
    "move",
    "board",
    "player",
    "score",
    "turn",
    "word",
    "letter",
    "position",
    "tool",
    "result",
    "search",
    "query",
    "answer",
    "think",
    "step",
    "plan",
    "the",
    "a",
    "is",
    "of",
    "to",
    "in",
    "and",
    "it",
    "that",
    "for",
    "on",
    "with",
    "as",
    "was",
    "at",
    "by",
    "this",
    "be",
]


@dataclass
class Request:
    """One generation: its prompt, its own budget, and whether it stops at the end of turn."""

    prompt: list[int]
    max_new: int
    stop_at_eos: bool


def resolve(model: str) -> Path:
    """A HF model directory for `--model`: a folder, `embedded`, or a named model via the resolver."""
    if model == "embedded":
        from turngym.engines.embedded_model import build_embedded_model

        return Path(build_embedded_model())
    path = Path(model).expanduser()
    if path.is_dir():
        return path
    from turngym.engines.checkpoint_export import CheckpointError, resolve_model

    try:
        return Path(resolve_model(model))
    except CheckpointError as exc:
        sys.exit(f"error: --model {model}: {exc} (pass --model <HF folder> or --model embedded)")


def sentence(rng: random.Random, lo: int, hi: int) -> str:
    """Random words: realistic BPE lengths without any data set."""
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi)))


def conversation(rng: random.Random, turns: int) -> list[dict]:
    """A game-like chat of `turns` exchanges, ending on a user message."""
    messages = [{"role": "system", "content": "You play a guessing game. " + sentence(rng, 10, 30)}]
    for t in range(turns):
        messages.append({"role": "user", "content": sentence(rng, 5, 40)})
        if t < turns - 1:
            messages.append({"role": "assistant", "content": sentence(rng, 3, 30)})
    return messages


def chat_ids(tokenizer, messages: list[dict]) -> list[int]:
    """Token ids of `messages` plus the generation prompt."""
    return list(
        tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True, return_dict=False)
    )


def equal_case(tokenizer, n: int, prompt_len: int, new: int) -> list[Request]:
    """`n` prompts cut to `prompt_len` tokens, each generating exactly `new` tokens."""
    rng = random.Random(1)
    out = []
    for _ in range(n):
        ids = chat_ids(tokenizer, conversation(rng, 6))
        out.append(Request(ids[-prompt_len:], new, stop_at_eos=False))
    return out


def mix_case(tokenizer, n: int) -> list[Request]:
    """`n` requests of a multi-turn rollout: 1-8 turns of history, budgets 8-128, stop at end of turn."""
    rng = random.Random(2)
    return [
        Request(
            chat_ids(tokenizer, conversation(rng, rng.randint(1, 8))), rng.choice([8, 16, 32, 64, 128]), True
        )
        for _ in range(n)
    ]


def useful(tokens: list[int], req: Request, eos: set[int]) -> list[int]:
    """The tokens `req` asked for: up to its budget and, when it stops at eos, its first end of turn."""
    tokens = tokens[: req.max_new]
    if req.stop_at_eos:
        for i, t in enumerate(tokens):
            if t in eos:
                return tokens[: i + 1]
    return tokens


def clocks() -> tuple[float, float]:
    """(wall, CPU seconds of this process): on a shared machine wall time also measures the other jobs."""
    return time.perf_counter(), time.process_time()


def elapsed(start: tuple[float, float]) -> tuple[float, float]:
    """(wall, CPU) seconds since `start`."""
    wall, cpu = clocks()
    return wall - start[0], cpu - start[1]


def run_generate(model, reqs: list[Request], pad_id: int, eos: list[int]):
    """transformers' `generate` on the requests as one left-padded greedy batch; ((wall, CPU), tokens)."""
    import torch

    width = max(len(r.prompt) for r in reqs)
    ids = torch.full((len(reqs), width), pad_id, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for i, r in enumerate(reqs):
        ids[i, width - len(r.prompt) :] = torch.tensor(r.prompt)
        mask[i, width - len(r.prompt) :] = 1
    stops = all(r.stop_at_eos for r in reqs)
    t0 = clocks()
    with torch.inference_mode():
        out = model.generate(
            input_ids=ids,
            attention_mask=mask,
            max_new_tokens=max(r.max_new for r in reqs),
            min_new_tokens=None if stops else max(r.max_new for r in reqs),
            do_sample=False,
            eos_token_id=eos if stops else None,
            pad_token_id=pad_id,
        )
    return elapsed(t0), [row[width:].tolist() for row in out]


def run_engine(engine, reqs: list[Request]):
    """HFEngine with every request submitted at once (as a rollout's episodes do); ((wall, CPU), tokens)."""

    async def go():
        return await asyncio.gather(
            *[
                engine.generate(
                    f"r{i}",
                    prompt_ids=r.prompt,
                    sampling_params={
                        "temperature": 0,
                        "max_tokens": r.max_new,
                        "ignore_eos": not r.stop_at_eos,
                    },
                )
                for i, r in enumerate(reqs)
            ]
        )

    t0 = clocks()
    outs = asyncio.run(go())
    return elapsed(t0), [list(o.token_ids) for o in outs]


def matmul_gflops(hidden: int, inner: int, vocab: int, rows: tuple[int, ...], dtype) -> dict[str, float]:
    """GFLOP/s (per CPU second) of torch matmuls of the model's shapes (MLP, lm_head) at several row counts."""
    import torch

    out = {}
    for m in rows:
        for name, n in (("mlp", inner), ("lm_head", vocab)):
            a, b = torch.randn(m, hidden, dtype=dtype), torch.randn(hidden, n, dtype=dtype)
            torch.matmul(a, b)
            reps = max(2, int(4e9 / (2 * m * hidden * n)))
            t0 = time.process_time()
            for _ in range(reps):
                torch.matmul(a, b)
            out[f"{m}x{hidden}x{n} ({name})"] = 2 * m * hidden * n * reps / (time.process_time() - t0) / 1e9
    return out


def forward_flops(cfg, matmul_params: int, contexts: list[tuple[int, int]]) -> float:
    """FLOPs of the forward passes that produce `(prompt_len, generated)` per request (prefill + decode)."""
    heads_dim = cfg.num_attention_heads * getattr(cfg, "head_dim", cfg.hidden_size // cfg.num_attention_heads)
    per_ctx = 4 * cfg.num_hidden_layers * heads_dim  # QK^T and AV: 2 FLOPs each per context position
    total = 0.0
    for prompt_len, gen in contexts:
        tokens = prompt_len + gen
        total += 2 * matmul_params * tokens
        total += per_ctx * tokens * (tokens + 1) / 2  # token t attends to t positions
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=REAL_MODEL, help="named model, HF folder, or 'embedded'")
    parser.add_argument("--equal", default="16x64x32", help="equal case: prompts x prompt_len x new tokens")
    parser.add_argument("--mix", type=int, default=16, help="requests in the multi-turn mix")
    parser.add_argument("--repeats", type=int, default=1, help="runs of each engine per case (median)")
    parser.add_argument("--max-batch-size", type=int, default=64)
    parser.add_argument("--no-bf16", action="store_true", help="skip the bfloat16 copy of the model")
    args = parser.parse_args()
    try:
        n_eq, len_eq, new_eq = (int(x) for x in args.equal.split("x"))
    except ValueError:
        sys.exit(f"error: --equal {args.equal!r}: expected prompts x prompt_len x new_tokens, e.g. 16x64x32")
    folder = resolve(args.model)

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from turngym.engines.hf_engine import HFEngine

    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    engines = {
        # The engine as it was: all requests admitted together share one left-padded prefill.
        "HFEngine one prefill": HFEngine(
            model, tokenizer, max_batch_size=args.max_batch_size, max_prefill_padding=float("inf")
        ),
        "HFEngine": HFEngine(model, tokenizer, max_batch_size=args.max_batch_size),
    }
    if not args.no_bf16:
        bf16 = copy.deepcopy(model).to(torch.bfloat16)
        engines["HFEngine bf16"] = HFEngine(bf16, tokenizer, max_batch_size=args.max_batch_size)
    engine = engines["HFEngine"]
    cfg = model.config
    params = sum(p.numel() for p in model.parameters())
    embed = model.get_input_embeddings().weight.numel()
    # The input embedding is a lookup, not a matmul; lm_head is one (tied or not).
    matmul_params = params - embed + cfg.vocab_size * cfg.hidden_size
    eos = sorted(engine.eos_token_ids)
    print(
        f"model {folder.name}: {params / 1e6:.1f}M parameters ({matmul_params / 1e6:.1f}M in matmuls), "
        f"{cfg.num_hidden_layers} layers; torch threads {torch.get_num_threads()} "
        f"(OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}); load average {os.getloadavg()[0]:.1f}"
    )
    bounds = {}
    for dtype in (torch.float32, torch.bfloat16):
        gflops = matmul_gflops(cfg.hidden_size, cfg.intermediate_size, cfg.vocab_size, (32, 256), dtype)
        bounds[dtype] = max(gflops.values())
        print(
            f"{str(dtype)[6:]} matmul GFLOP/s per CPU second: "
            + ", ".join(f"{k} {v:.1f}" for k, v in gflops.items())
            + f"; bound {bounds[dtype]:.1f}"
        )

    warm = [Request(chat_ids(tokenizer, conversation(random.Random(0), 1)), 4, False)] * 2
    run_generate(model, warm, engine.pad_token_id, eos)
    for e in engines.values():
        run_engine(e, warm)

    cases = [
        (
            f"equal ({n_eq} x {len_eq} prompt tokens, {new_eq} new)",
            equal_case(tokenizer, n_eq, len_eq, new_eq),
        ),
        (f"mix ({args.mix} multi-turn requests)", mix_case(tokenizer, args.mix)),
    ]
    print(
        "\ntok/s and GFLOP/s per CPU second of this process (wall-clock tok/s in brackets: they also "
        "measure the machine's other jobs); ratios on CPU seconds"
    )
    for title, reqs in cases:
        lens = [len(r.prompt) for r in reqs]
        print(
            f"\n{title}: prompts {min(lens)}-{max(lens)} tokens, budgets {sorted({r.max_new for r in reqs})}"
        )
        runners = {
            "generate": (lambda r=reqs: run_generate(model, r, engine.pad_token_id, eos), torch.float32)
        }
        for name, e in engines.items():
            runners[name] = (lambda r=reqs, e=e: run_engine(e, r), e.model.dtype)
        results = {}
        for _ in range(args.repeats):  # interleaved, so a change in the machine's load hits every engine
            for name, (fn, _dtype) in runners.items():
                results.setdefault(name, []).append(fn())
        base = None
        for name, runs in results.items():
            wall = statistics.median(s[0] for s, _ in runs)
            cpu = statistics.median(s[1] for s, _ in runs)
            tokens = [useful(t, r, set(eos)) for t, r in zip(runs[0][1], reqs, strict=True)]
            n_tok = sum(len(t) for t in tokens)
            flops = forward_flops(
                cfg, matmul_params, [(len(r.prompt), len(t)) for r, t in zip(reqs, tokens, strict=True)]
            )
            share = flops / cpu / 1e9 / bounds[runners[name][1]]
            line = f"  {name:21s} {n_tok:5d} tokens in {cpu:6.1f} CPU s = {n_tok / cpu:6.1f} tok/s "
            line += f"[{n_tok / wall:6.1f}], {flops / cpu / 1e9:6.1f} GFLOP/s = {share:5.1%} of the "
            line += f"{str(runners[name][1])[6:]} matmul bound"
            if base is None:
                base = (n_tok / cpu, tokens)
            else:
                same = sum(a == b for a, b in zip(tokens, base[1], strict=True))
                line += f"; {(n_tok / cpu) / base[0]:.2f}x generate; same greedy tokens in {same}/{len(reqs)} rows"
            print(line)
    for name, e in engines.items():
        st = e.stats
        print(
            f"{name}: {st.prefills} prefill forwards for {st.batches} admissions, prompt slots "
            f"{st.padded_prompt_tokens} for {st.prompt_tokens} prompt tokens"
        )


if __name__ == "__main__":
    main()
