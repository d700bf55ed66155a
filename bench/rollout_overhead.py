"""Rollout overhead: how much of a collect's wall time is spent outside the engine, and assembly speed.

1. 64 concurrent guess-number-v0 episodes with HFEngine on the embedded tiny model (CPU): wall time
   against the time the engine spends generating (its batches, measured in the engine), printed as the
   loop's overhead share = 1 - engine_busy / wall (goal < 5%).
2. Token assembly on long multi-turn episodes with a zero-latency scripted engine: response tokens
   assembled per second, against a baseline of tokenizing the same conversations in one piece.

Usage: .venv/bin/python bench/rollout_overhead.py [--episodes 64] [--long-turns 60]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


class LongChatEnv:
    """A minimal env of `turns` turns: each reply gets a tool result or a user message back.

    It carries every member of the env contract (`envs.core.protocol.EnvProtocol`), so `run_episode` plays it,
    and costs next to nothing per step, so the figure is the rollout's own assembly.
    """

    max_action_chars = 32768
    tool_call_format: str | None = "hermes"

    def __init__(self, turns: int):
        self.turns = turns
        self.tool_schemas = [
            {
                "type": "function",
                "function": {
                    "name": "lookup",
                    "description": "Look a word up.",
                    "parameters": {"type": "object", "properties": {"word": {"type": "string"}}},
                },
            }
        ]

    @property
    def unwrapped(self):
        return self

    def reset(self, seed=None, options=None):
        self.rng, self.t = random.Random(seed), 0
        return [
            {"role": "system", "content": "Answer with tools."},
            {"role": "user", "content": "Start the task."},
        ], {}

    async def areset(self, seed=None, options=None):
        return self.reset(seed=seed, options=options)

    def step(self, action):
        return asyncio.run(self.astep(action))

    def set_tool_call_format(self, tool_call_format):
        self.tool_call_format = tool_call_format

    def set_turn_limits(self, **limits):
        pass

    async def astep(self, action):
        self.t += 1
        calls = getattr(action, "tool_calls", ())  # the rollout's AssistantTurn when there are tools
        words = " ".join(
            self.rng.choice(["alpha", "beta", "gamma", "delta", "42", "higher"]) for _ in range(30)
        )
        msgs = [{"role": "tool", "tool_call_id": c.id, "name": "lookup", "content": words} for c in calls]
        msgs = msgs or [{"role": "user", "content": words}]
        return msgs, 0.01, self.t >= self.turns, False, {}

    def close(self):
        pass


def bench_overhead(n_episodes: int, max_new_tokens: int) -> None:
    from rollout.collection import acollect
    from rollout.episode import EpisodeConfig
    from turngym.engines.hf_engine import HFEngine

    engine = HFEngine(max_batch_size=n_episodes, seed=0)
    cfg = EpisodeConfig(max_new_tokens=max_new_tokens, max_response_tokens=512, max_turns=6)
    sampling = {"temperature": 1.0}

    async def run():
        return await acollect(
            "guess-number-v0",
            engine,
            engine.tokenizer,
            n_episodes,
            concurrency=n_episodes,
            env_kwargs={"difficulty": "medium"},
            sampling_params=sampling,
            config=cfg,
        )

    asyncio.run(
        acollect("guess-number-v0", engine, engine.tokenizer, 4, sampling_params=sampling, config=cfg)
    )  # warm-up
    busy0, batches0 = engine.stats.forward_seconds, engine.stats.batches
    t0 = time.perf_counter()
    trajs = asyncio.run(run())
    wall = time.perf_counter() - t0
    if trajs.failed:
        raise SystemExit(f"[overhead] {len(trajs.failed)} episodes failed: {trajs.failed[0].error}")
    busy = engine.stats.forward_seconds - busy0
    batches = engine.stats.batches - batches0
    gen = sum(t.metrics["generated_tokens"] for t in trajs)
    turns = sum(t.num_turns for t in trajs)
    env_s = sum(t.metrics["env_s"] for t in trajs)
    tok_s = sum(t.metrics["tokenize_s"] for t in trajs)
    print(
        f"[overhead] {len(trajs)} concurrent guess-number episodes, HFEngine tiny model, {turns} turns, {gen} generated tokens"
    )
    print(f"  wall {wall:.2f}s | engine busy (inside generate batches) {busy:.2f}s in {batches} batches")
    print(f"  env steps {env_s * 1000:.1f} ms total | template/tokenize {tok_s * 1000:.1f} ms total")
    print(f"  loop overhead share = 1 - busy/wall = {100 * (1 - busy / wall):.2f}%  (goal < 5%)")


def bench_assembly(n_episodes: int, turns: int) -> None:
    from transformers import AutoTokenizer

    from rollout.episode import EpisodeConfig, run_episode
    from rollout.scripted_engine import ScriptedEngine
    from turngym.chat.format import ChatFormat
    from turngym.engines.embedded_model import build_embedded_model

    tok = AutoTokenizer.from_pretrained(build_embedded_model())
    env0 = LongChatEnv(turns)

    def script(turn, rng):
        if rng.random() < 0.5:
            return {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": "call_0",
                        "type": "function",
                        "function": {"name": "lookup", "arguments": {"word": "alpha"}},
                    }
                ],
            }
        return {
            "role": "assistant",
            "content": "The answer so far is " + " ".join(rng.choice(["a", "b", "c"]) for _ in range(20)),
        }

    engine = ScriptedEngine(tok, script, tools=env0.tool_schemas)
    cfg = EpisodeConfig(max_new_tokens=None, max_response_tokens=1_000_000, max_turns=turns + 1)

    async def run():
        return await asyncio.gather(
            *[
                run_episode(LongChatEnv(turns), engine, tok, seed=s, config=cfg, request_id=f"e{s}")
                for s in range(n_episodes)
            ]
        )

    t0 = time.perf_counter()
    trajs = asyncio.run(run())
    wall = time.perf_counter() - t0
    failed = [t.error for t in trajs if t.failed]
    if failed:  # a failed episode assembles nothing: its speed would be no figure at all
        raise SystemExit(f"[assembly] {len(failed)} of {len(trajs)} episodes failed: {failed[0]}")
    total = sum(len(t.prompt_ids) + len(t.response_ids) for t in trajs)
    fmt = ChatFormat(tok, env0.tool_schemas)
    t1 = time.perf_counter()
    for t in trajs:
        fmt.encode(fmt.render(t.messages))
    base = time.perf_counter() - t1
    print(
        f"[assembly] {n_episodes} episodes x {turns} turns, {total} tokens (avg {total // n_episodes}/episode)"
    )
    print(
        f"  assembled {total / wall:,.0f} tokens/s ({wall:.2f}s, scripted engine, env + template + parse included)"
    )
    print(
        f"  baseline: one-shot render+tokenize of the same conversations {total / base:,.0f} tokens/s ({base:.2f}s)"
    )
    print(f"  ratio assembly/baseline time = {wall / base:.2f}x")


def main() -> None:
    """Print both figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--episodes", type=int, default=64)
    parser.add_argument("--max-new-tokens", type=int, default=24)
    parser.add_argument("--long-episodes", type=int, default=16)
    parser.add_argument("--long-turns", type=int, default=60)
    args = parser.parse_args()
    bench_overhead(args.episodes, args.max_new_tokens)
    bench_assembly(args.long_episodes, args.long_turns)


if __name__ == "__main__":
    main()
