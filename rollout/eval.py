"""`python -m rollout.eval env=<id> engine=hf|sglang n=<episodes> [key=value ...] [--save traj.jsonl]`

Keys: model=<hf dir> (hf; default the embedded tiny model), url=<server> (sglang; default
http://127.0.0.1:30000), tokenizer=<dir> (sglang; default model), group=1, concurrency=64, seed=0,
temperature=1.0, top_p=1.0, top_k=-1, max_new_tokens=256, max_response_tokens=2048, max_turns=64,
env.<name>=<value> (env kwargs, e.g. env.difficulty=easy). Prints a progress bar, then a summary.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

USAGE = __doc__


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def parse_args(argv: list[str]) -> tuple[dict[str, Any], dict[str, Any], str | None]:
    """key=value pairs -> (options, env kwargs, save path)."""
    opts: dict[str, Any] = {}
    env_kwargs: dict[str, Any] = {}
    save = None
    it = iter(argv)
    for arg in it:
        if arg in ("-h", "--help"):
            raise SystemExit(USAGE)
        if arg == "--save":
            save = next(it, None)
            if save is None:
                raise SystemExit("--save needs a path")
            continue
        if arg.startswith("--save="):
            save = arg.split("=", 1)[1]
            continue
        if "=" not in arg:
            raise SystemExit(f"expected key=value, got {arg!r}\n\n{USAGE}")
        key, val = arg.split("=", 1)
        if key.startswith("env."):
            env_kwargs[key[4:]] = _value(val)
        else:
            opts[key] = _value(val) if key not in ("env", "model", "url", "tokenizer") else val
    if "env" not in opts:
        raise SystemExit(f"env=<id> is required\n\n{USAGE}")
    return opts, env_kwargs, save


def build_engine(opts: dict[str, Any]):
    """(engine, tokenizer) for engine=hf|sglang."""
    from transformers import AutoTokenizer

    kind = opts.get("engine", "hf")
    if kind == "hf":
        from rollout.hf_engine import HFEngine

        engine = HFEngine(opts.get("model"), seed=int(opts.get("seed", 0)))
        return engine, engine.tokenizer
    if kind == "sglang":
        from rollout.sglang_engine import SGLangEngine

        tok_path = opts.get("tokenizer") or opts.get("model")
        if tok_path is None:
            from trainer.embedded_model import build_embedded_model

            tok_path = build_embedded_model()
        return SGLangEngine(opts.get("url", "http://127.0.0.1:30000")), AutoTokenizer.from_pretrained(
            tok_path
        )
    raise SystemExit(f"engine must be hf or sglang, got {kind!r}")


def format_summary(summary: dict[str, float], wall: float) -> str:
    """A two-column table."""
    rows = [(k, v) for k, v in summary.items()]
    rows.append(("wall_s", wall))
    rows.append(("generated_tokens_per_s", summary.get("generated_tokens", 0.0) / wall if wall > 0 else 0.0))
    width = max(len(k) for k, _ in rows)
    lines = [f"{'metric'.ljust(width)}  value", f"{'-' * width}  -----"]
    for k, v in rows:
        shown = f"{v:.4g}" if isinstance(v, float) else str(v)
        lines.append(f"{k.ljust(width)}  {shown}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Run the evaluation and print the summary; returns the summary dict."""
    from tqdm import tqdm

    from rollout.collect import acollect, summarize
    from rollout.episode import EpisodeConfig
    from rollout.trajectory import save_jsonl

    opts, env_kwargs, save = parse_args(sys.argv[1:] if argv is None else argv)
    engine, tokenizer = build_engine(opts)
    n = int(opts.get("n", 8))
    cfg = EpisodeConfig(
        max_turns=int(opts.get("max_turns", 64)),
        max_new_tokens=int(opts.get("max_new_tokens", 256)),
        max_response_tokens=int(opts.get("max_response_tokens", 2048)),
    )
    sampling = {k: opts[k] for k in ("temperature", "top_p", "top_k") if k in opts}
    sampling.setdefault("temperature", 1.0)
    bar = tqdm(total=n, desc=f"{opts['env']} ({opts.get('engine', 'hf')})", unit="ep")

    def tick(traj):
        bar.update(1)
        bar.set_postfix(reward=f"{traj.total_reward:.2f}", turns=traj.num_turns)

    t0 = time.perf_counter()
    batch = asyncio.run(
        acollect(
            opts["env"],
            engine,
            tokenizer,
            n,
            group_size=int(opts.get("group", 1)),
            concurrency=int(opts.get("concurrency", 64)),
            seed=int(opts.get("seed", 0)),
            env_kwargs=env_kwargs,
            sampling_params=sampling,
            config=cfg,
            on_episode=tick,
        )
    )
    wall = time.perf_counter() - t0
    bar.close()
    summary = summarize(batch)
    print(format_summary(summary, wall))
    for t in batch.failed[:3]:
        print(f"failed episode (seed {t.seed}): {t.error}", file=sys.stderr)
    if save:
        save_jsonl(list(batch) + list(batch.failed), save)
        print(f"saved {len(batch) + len(batch.failed)} trajectories to {save}")
    return summary


if __name__ == "__main__":
    main()
