"""The repository files one assistant turn passes through, from the model's tokens to the next prompt.

Plays guess-number with the scripted engine and the embedded tiny model's tokenizer: turn 1 is plain
text ("10"), turn 2 is a `guess` tool call, turn 3 is text again. For turns 1 and 2 it records every
repository module whose Python code runs between the engine returning that turn's tokens and the engine
being asked for the next turn (the rollout reading the reply, the env's step with its wrappers and
tools, and tokenizing the env's answer), and prints the files and their count. Fewer files means a turn
a reader can follow; the figure is a reading aid, not a speed measure.

Run: python bench/turn_path.py [--env guess-number-v0] [--files]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The checkout this script is in, not whichever one is installed (a worktree measures its own code).
sys.path.insert(0, str(ROOT))

PACKAGES = ("turngym", "envs", "tools", "interactions", "rollout", "trainer")


def _turn_action(turn: int) -> dict | str:
    if turn == 1:
        call = {"id": "call_0", "type": "function", "function": {"name": "guess", "arguments": {"number": 5}}}
        return {"role": "assistant", "content": "", "tool_calls": [call]}
    return str(10 + turn)


class _Recorder:
    """Which repository files run while `active` is set, per turn."""

    def __init__(self) -> None:
        self.turn: int | None = None
        self.files: dict[int, set[str]] = {}

    def profile(self, frame, event, arg):  # noqa: ANN001 - sys.setprofile's signature
        if event != "call" or self.turn is None:
            return
        path = frame.f_code.co_filename
        try:
            rel = Path(path).resolve().relative_to(ROOT)
        except ValueError:
            return
        if rel.parts and rel.parts[0] in PACKAGES:
            self.files.setdefault(self.turn, set()).add(str(rel))


def measure(env_id: str) -> dict[int, set[str]]:
    """{turn: repository files run} for turns 0 (text) and 1 (a tool call) of one episode of `env_id`."""
    from transformers import AutoTokenizer

    import envs
    from rollout.episode import EpisodeConfig, run_episode
    from rollout.scripted_engine import ScriptedEngine
    from turngym.engines.embedded_model import build_embedded_model

    tokenizer = AutoTokenizer.from_pretrained(build_embedded_model())
    recorder = _Recorder()
    env = envs.make(env_id)
    tools = env.tool_schemas

    class Traced(ScriptedEngine):
        async def generate(self, request_id, *, prompt_ids, sampling_params=None, **kwargs):
            recorder.turn = None  # the previous turn ends where the next generation starts
            out = await super().generate(request_id, prompt_ids=prompt_ids, sampling_params=sampling_params)
            turn = self._turns[request_id] - 1
            recorder.turn = turn if turn < 2 else None
            return out

    engine = Traced(tokenizer, lambda turn, rng: _turn_action(turn), tools=tools)
    sys.setprofile(recorder.profile)
    threading.setprofile(recorder.profile)
    try:
        traj = asyncio.run(
            run_episode(env, engine, tokenizer, seed=0, config=EpisodeConfig(max_turns=3, max_new_tokens=64))
        )
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    if traj.failed:
        raise SystemExit(f"the episode failed: {traj.error}")
    return recorder.files


def main() -> None:
    """Print the files per turn and their counts."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--env", default="guess-number-v0")
    parser.add_argument("--files", action="store_true", help="list the files, not only their count")
    args = parser.parse_args()
    files = measure(args.env)
    for turn, label in ((0, "text reply"), (1, "tool call")):
        seen = sorted(files.get(turn, ()))
        print(f"turn {turn + 1} ({label}): {len(seen)} repository files")
        if args.files:
            for name in seen:
                print(f"    {name}")


if __name__ == "__main__":
    main()
