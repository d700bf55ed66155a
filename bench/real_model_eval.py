"""Zero-shot table of a real model: `rollout.eval`'s machinery on every native env and ten TextArena games.

    python bench/real_model_eval.py                          # smollm2-135m-instruct, n=8, temperature 0.7
    python bench/real_model_eval.py --n 2 --envs guess-number-v0,textarena/Nim-v0
    python bench/real_model_eval.py --model <HF dir | run folder | gguf:<file>> --save traj.jsonl

One engine (HFEngine) is loaded once; envs run `--parallel` at a time on it (their episodes batch
together), each with `rollout.collect`'s episodes and `rollout.summarize`'s metrics. Per env it reports
success rate, mean reward, format errors per episode (the env's refusals plus unreadable tool calls),
assistant turns, the share of episodes that ran out of the token budget (overflow), and generated
tokens per second (that env's tokens over its own wall time, while sharing the engine with the other
envs running beside it). A progress line per env goes to stderr, the markdown table and the total wall
time to stdout.

Budgets are the same for every env of a category, so rows compare: game moves are short, so games get
a small per-turn cap; tool-use, conversation and code envs need room for a call or a program.
`--max-new-tokens` sets one cap for all.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

DEFAULT_MODEL = "smollm2-135m-instruct"
# Ten TextArena games: five single-player (number search, code-breaking, planning, a grid with hidden
# mines, a card game of chance) and five two-player against the random opponent (two board games, a
# betting game, a counting game, a repeated matrix game).
TEXTARENA_PICK = (
    "textarena/GuessTheNumber-v0",
    "textarena/Mastermind-v0",
    "textarena/TowerOfHanoi-v0",
    "textarena/Minesweeper-v0-small",
    "textarena/Blackjack-v0",
    "textarena/TicTacToe-v0",
    "textarena/ConnectFour-v0",
    "textarena/KuhnPoker-v0",
    "textarena/Nim-v0",
    "textarena/IteratedRockPaperScissors-v0",
)
# Tokens per assistant turn by env category: a game move is a few tokens (the zero-shot model's prose
# around it is what the cap cuts); a tool call, an answer to a customer or a program needs more.
TURN_CAPS = {"code": 128, "conversation": 64, "tool-use": 64}
GAME_TURN_CAP = 24
COLUMNS = ("env", "success", "reward", "format err/ep", "turns", "overflow", "tok/s")


def native_envs() -> list[str]:
    """Every registered env that is not a TextArena mirror (what `python -m envs list` shows first)."""
    import envs

    return [s.id for s in envs.list_envs() if not s.category.startswith("textarena")]


def turn_cap(env_id: str, override: int | None) -> int:
    """Tokens one assistant turn may take in `env_id` (`override` wins)."""
    import envs

    if override is not None:
        return override
    return TURN_CAPS.get(envs.spec(env_id).category, GAME_TURN_CAP)


def tools_hidden(env_id: str, tokenizer: Any) -> bool:
    """Whether `env_id` has tools that the chat template itself does not render (the rollout lists them)."""
    import envs

    env = envs.make(env_id)
    try:
        messages, _ = env.reset(seed=0)
        schemas = env.unwrapped.tool_schemas
    finally:
        env.close()
    if not schemas:
        return False

    def render(tools: list | None) -> str:
        return tokenizer.apply_chat_template(
            messages, tools=tools, tokenize=False, add_generation_prompt=True
        )

    return render(schemas) == render(None)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line flags; env ids and model are checked later, before the model loads."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--model", default=DEFAULT_MODEL, help=f"name, gguf:<file>, HF dir or run (default {DEFAULT_MODEL})"
    )
    p.add_argument("--n", type=int, default=8, help="episodes per env (default 8)")
    p.add_argument(
        "--envs", default=None, help="comma-separated env ids (default: native envs + ten TextArena)"
    )
    p.add_argument("--temperature", type=float, default=0.7)
    p.add_argument("--max-turns", type=int, default=6, help="assistant turns per episode (default 6)")
    p.add_argument("--max-new-tokens", type=int, default=None, help="one cap per turn for every env")
    p.add_argument(
        "--max-response-tokens", type=int, default=1024, help="tokens after the prompt (default 1024)"
    )
    p.add_argument(
        "--parallel", type=int, default=8, help="envs collected at once on the one engine (default 8)"
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--save", default=None, help="write every trajectory here (JSONL; python -m rollout.view)")
    args = p.parse_args(argv)
    for name in ("n", "max_turns", "max_response_tokens", "parallel"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1")
    if args.max_new_tokens is not None and args.max_new_tokens < 1:
        p.error("--max-new-tokens must be >= 1")
    if args.temperature < 0:
        p.error("--temperature must be >= 0")
    return args


def env_list(spec: str | None) -> list[str]:
    """The env ids to evaluate: `spec` split on commas, or every native env plus TEXTARENA_PICK."""
    if spec is None:
        return native_envs() + list(TEXTARENA_PICK)
    ids = [e.strip() for e in spec.split(",") if e.strip()]
    if not ids:
        raise SystemExit(
            "real_model_eval: --envs is empty; give comma-separated env ids (python -m envs list)"
        )
    return ids


def row(env_id: str, summary: dict[str, float], wall: float) -> dict[str, Any]:
    """One table row from `rollout.summarize`'s metrics and the env's wall time."""
    episodes = int(summary.get("episodes", 0))
    failed = int(summary.get("failed_episodes", 0))
    if not episodes:
        return {"env": env_id, "episodes": 0, "failed": failed, "wall_s": wall}
    return {
        "env": env_id,
        "episodes": episodes,
        "failed": failed,
        "successes": round(summary["success_rate"] * episodes)
        if summary["success_rate"] == summary["success_rate"]
        else 0,
        "reward": summary["reward_mean"],
        "format_errors": summary["format_errors_mean"] + summary["parse_errors_mean"],
        "turns": summary["turns_mean"],
        "overflow": summary["overflow_rate"],
        "tokens": summary["generated_tokens"],
        "wall_s": wall,
        "tok_s": summary["generated_tokens"] / wall if wall > 0 else 0.0,
    }


def markdown_table(rows: list[dict[str, Any]]) -> str:
    """The rows as a markdown table (failed episodes, if any, noted beside the env)."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "|".join("---" for _ in COLUMNS) + "|"]
    for r in rows:
        name = f"`{r['env']}`" + (" †" if r.get("tools_hidden") else "")
        name += f" ({r['failed']} failed)" if r["failed"] else ""
        if not r["episodes"]:
            lines.append(f"| {name} | - | - | - | - | - | - |")
            continue
        lines.append(
            f"| {name} | {r['successes']}/{r['episodes']} | {r['reward']:.2f} | {r['format_errors']:.1f} | "
            f"{r['turns']:.1f} | {r['overflow']:.0%} | {r['tok_s']:.1f} |"
        )
    if any(r.get("tools_hidden") for r in rows):
        lines.append(
            "\n† the env has tools and the model's chat template renders none: the rollout lists them in the "
            "system message (hermes <tool_call> format, rollout/tool_prompt.py)"
        )
    return "\n".join(lines)


async def evaluate(
    env_ids: list[str], engine: Any, tokenizer: Any, args: argparse.Namespace
) -> tuple[list[dict[str, Any]], list]:
    """Collect `args.n` episodes per env, `args.parallel` envs at a time; rows in `env_ids` order."""
    from rollout.collection import acollect, summarize
    from rollout.episode import EpisodeConfig

    gate = asyncio.Semaphore(args.parallel)
    done = 0

    async def one(env_id: str) -> tuple[dict[str, Any], list]:
        nonlocal done
        config = EpisodeConfig(
            max_turns=args.max_turns,
            max_new_tokens=turn_cap(env_id, args.max_new_tokens),
            max_response_tokens=args.max_response_tokens,
        )
        async with gate:
            t0 = time.perf_counter()
            batch = await acollect(
                env_id,
                engine,
                tokenizer,
                args.n,
                seed=args.seed,
                sampling_params={"temperature": args.temperature},
                config=config,
            )
            wall = time.perf_counter() - t0
        r = row(env_id, summarize(batch), wall)
        r["tools_hidden"] = tools_hidden(env_id, tokenizer)
        done += 1
        shown = (
            f"success {r['successes']}/{r['episodes']}, reward {r['reward']:.2f}, format errors/ep "
            f"{r['format_errors']:.1f}, turns {r['turns']:.1f}, overflow {r['overflow']:.0%}, {r['tok_s']:.1f} tok/s"
            if r["episodes"]
            else "no episode finished"
        )
        print(f"[{done}/{len(env_ids)}] {env_id}: {shown}, {wall:.0f} s", file=sys.stderr, flush=True)
        for t in batch.failed[:2]:
            print(f"  failed episode (seed {t.seed}): {t.error}", file=sys.stderr, flush=True)
        return r, list(batch) + list(batch.failed)

    results = await asyncio.gather(*(one(e) for e in env_ids))
    return [r for r, _ in results], [t for _, ts in results for t in ts]


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    """Run the evaluation, print the table and wall time; returns the rows."""
    from rollout.eval import UsageError, build_engine, eval_plan, save_trajectories
    from turngym.engines.checkpoint_export import CheckpointError, resolve_model

    args = parse_args(argv)
    env_ids = env_list(args.envs)
    try:  # every id known and every env buildable before the model loads
        for env_id in env_ids:
            eval_plan({"env": env_id}, {}, {})
        model_dir = str(resolve_model(args.model))
    except (UsageError, CheckpointError) as exc:
        raise SystemExit(f"real_model_eval: {exc}") from None
    t0 = time.perf_counter()
    engine, tokenizer, tokenizer_path = build_engine({"model": model_dir, "seed": args.seed})
    caps = args.max_new_tokens or ", ".join(
        [f"games {GAME_TURN_CAP}"] + [f"{k} {v}" for k, v in TURN_CAPS.items()]
    )
    print(
        f"model {args.model}: n={args.n} per env, temperature {args.temperature}, max_turns={args.max_turns}, "
        f"max_response_tokens={args.max_response_tokens}, max_new_tokens per turn: {caps}; "
        f"{args.parallel} envs at a time, load {os.getloadavg()[0]:.1f}",
        file=sys.stderr,
        flush=True,
    )
    rows, trajectories = asyncio.run(evaluate(env_ids, engine, tokenizer, args))
    wall = time.perf_counter() - t0
    print(markdown_table(rows))
    tokens = sum(r.get("tokens", 0.0) for r in rows)
    print(
        f"\nmodel {args.model}, n={args.n}, temperature {args.temperature}: total wall {wall:.0f} s "
        f"(model load included), {tokens:.0f} generated tokens ({tokens / wall:.1f} tok/s overall), "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    if args.save:
        save_trajectories(trajectories, args.save, args.model, str(tokenizer_path))
        print(f"saved {len(trajectories)} trajectories to {args.save} (python -m rollout.view {args.save})")
    return rows


if __name__ == "__main__":
    main()
