"""HFEngine with and without its prefix cache on the same multi-turn episodes: time and prompt tokens computed.

Each turn of an episode sends the whole history as the prompt. Without the cache every turn prefills it
all again; with it (the default, `prefix_cache_tokens=32768`) a turn prefills only what it added to the
previous turn's prompt and generated ids. Both engines share one model object and run the same seeds
in the same run, alternating (off, on, off, on, ...) so a change in the machine's load hits both.

    python bench/prefix_cache.py                                  # smollm2-135m-instruct, make train-real's episodes
    python bench/prefix_cache.py --model embedded --n 64 --repeats 3
    python bench/prefix_cache.py --env textarena/TicTacToe-v0 --max-new-tokens 24

Prints, per engine: wall seconds (median over repeats), prompt slots computed (padding included),
prompt tokens reused from the cache, generated tokens per second, and the ratio against no cache; then
whether both engines played the same episodes. Sampling is seeded per turn (`sampling_seed`, the same
for every episode), so the two engines draw the same random numbers; their logits agree within float
tolerance, so they mostly pick the same tokens.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line flags."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--model", default="smollm2-135m-instruct", help="named model, gguf:<file>, HF dir or 'embedded'"
    )
    p.add_argument("--env", default="guess-number-v0")
    p.add_argument(
        "--env-kwargs",
        default="difficulty=easy,action_tool=false",
        help="comma-separated KEY=VALUE for envs.make",
    )
    p.add_argument(
        "--n", type=int, default=32, help="episodes per run (default 32: one make train-real step)"
    )
    p.add_argument("--max-turns", type=int, default=6)
    p.add_argument("--max-new-tokens", type=int, default=8)
    p.add_argument("--max-response-tokens", type=int, default=384)
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--repeats", type=int, default=2, help="runs of each engine, alternating (median)")
    args = p.parse_args(argv)
    if args.n < 1 or args.repeats < 1:
        p.error("--n and --repeats must be >= 1")
    return args


def env_kwargs(text: str) -> dict[str, object]:
    """`KEY=VALUE,KEY=VALUE` as a dict, each value read as YAML (`false` is a bool, `7` an int)."""
    import yaml

    out: dict[str, object] = {}
    for part in filter(None, (x.strip() for x in text.split(","))):
        key, sep, value = part.partition("=")
        if not sep:
            raise SystemExit(f"prefix_cache: --env-kwargs wants KEY=VALUE, got {part!r}")
        out[key] = yaml.safe_load(value)
    return out


def load(model: str):
    """The model and tokenizer (a named model converts once into its cache)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if model == "embedded":
        from turngym.engines.embedded_model import build_embedded_model

        path = build_embedded_model()
    else:
        from turngym.engines.checkpoint_export import resolve_model

        path = resolve_model(model)
    return AutoModelForCausalLM.from_pretrained(
        path, dtype=torch.float32
    ).eval(), AutoTokenizer.from_pretrained(path)


def run_once(engine, tokenizer, args: argparse.Namespace, kwargs: dict) -> tuple[float, list]:
    """Collect `args.n` episodes on `engine`; return wall seconds and the trajectories."""
    from rollout.collection import acollect
    from rollout.episode import EpisodeConfig

    config = EpisodeConfig(
        max_turns=args.max_turns,
        max_new_tokens=args.max_new_tokens,
        max_response_tokens=args.max_response_tokens,
    )
    start = time.perf_counter()
    batch = asyncio.run(
        acollect(
            args.env,
            engine,
            tokenizer,
            args.n,
            seed=0,
            env_kwargs=kwargs,
            sampling_params={"temperature": args.temperature, "sampling_seed": 1234},
            config=config,
        )
    )
    return time.perf_counter() - start, list(batch)


def main(argv: list[str] | None = None) -> dict[str, dict[str, float]]:
    """Run both engines, print the table; returns the figures per engine."""
    import torch

    from turngym.engines.hf_engine import HFEngine

    args = parse_args(argv)
    kwargs = env_kwargs(args.env_kwargs)
    model, tokenizer = load(args.model)
    engines = {
        "no prefix cache": lambda: HFEngine(model, tokenizer, prefix_cache_tokens=0, seed=0),
        "prefix cache": lambda: HFEngine(model, tokenizer, seed=0),
    }
    walls: dict[str, list[float]] = {name: [] for name in engines}
    stats: dict[str, object] = {}
    played: dict[str, list] = {}
    print(
        f"model {args.model}, env {args.env} {kwargs}, {args.n} episodes x <= {args.max_turns} turns of "
        f"<= {args.max_new_tokens} tokens, {args.repeats} repeats, threads {torch.get_num_threads()}, "
        f"load {os.getloadavg()[0]:.1f}",
        file=sys.stderr,
        flush=True,
    )
    for rep in range(args.repeats):
        for name, build in engines.items():
            engine = build()
            wall, trajectories = run_once(engine, tokenizer, args, kwargs)
            walls[name].append(wall)
            stats[name], played[name] = engine.stats, trajectories
            print(f"  repeat {rep + 1}, {name}: {wall:.1f} s", file=sys.stderr, flush=True)
    base = statistics.median(walls["no prefix cache"])
    figures: dict[str, dict[str, float]] = {}
    print("| engine | wall s | prompt slots computed | prompt tokens reused | generated tok/s | speed-up |")
    print("|---|---|---|---|---|---|")
    for name in engines:
        st = stats[name]
        wall = statistics.median(walls[name])
        figures[name] = {
            "wall_s": wall,
            "computed": st.padded_prompt_tokens,
            "reused": st.reused_prompt_tokens,
            "tok_s": st.generated_tokens / wall,
            "speedup": base / wall,
        }
        f = figures[name]
        print(
            f"| {name} | {wall:.1f} | {f['computed']} | {f['reused']} | {f['tok_s']:.1f} | {f['speedup']:.2f}x |"
        )
    same = sum(
        a.response_ids == b.response_ids
        for a, b in zip(played["no prefix cache"], played["prefix cache"], strict=False)
    )
    print(
        f"\nsame episodes (identical response tokens): {same}/{len(played['prefix cache'])}; "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    return figures


if __name__ == "__main__":
    main()
