"""The strategy a guess-number player used, read from its saved episodes by replaying them in the env.

    python bench/guess_number_strategy.py held_out_trained.jsonl [more.jsonl ...] [--episodes 5]

Each episode's assistant replies are played again through `guess-number-v0` (easy, text moves) on the
episode's seed, so a guess is what the env read, never what a regex guesses. Per file it prints:

- the openings (first guesses) and how often each was played;
- the step after "too low" and after "too high" (the next guess minus the last one), as a median and
  its most common values;
- the median number of guesses in a won episode;
- how far the guesses are from halving: the mean distance of a guess from the middle of the range the
  answers so far allow, as a share of that range (binary search: about 0; a +1 walk after "too low"
  from the bottom of the range: about 0.5), and the share of guesses within one of the middle.
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

PLAIN_KWARGS = {"difficulty": "easy", "action_tool": False}


def replay_guesses(record: Mapping[str, Any], env_kwargs: Mapping[str, Any] = PLAIN_KWARGS) -> list[dict]:
    """The read guesses of one saved episode: for each, the guess, the allowed range before it, the answer.

    Args:
        record: One saved episode (``rollout.eval --save``): ``seed`` and ``messages``.
        env_kwargs: guess-number's settings the episode was played with.

    Returns:
        One dict per guess the env read: ``guess``, ``low``, ``high`` (the range the answers allowed
        before it) and ``answer`` (``low``, ``high`` or ``correct``).
    """
    import envs

    env = envs.make("guess-number-v0", **dict(env_kwargs))
    env.reset(seed=int(record["seed"]))
    base = env.unwrapped
    played: list[dict] = []
    for message in record.get("messages", []):
        if message.get("role") != "assistant":
            continue
        low, high, before = base.known_low, base.known_high, len(base.guesses)
        _, _, terminated, truncated, _ = env.step(str(message.get("content") or ""))
        if len(base.guesses) > before:
            guess = base.guesses[-1]
            answer = "correct" if guess == base.secret else ("low" if guess < base.secret else "high")
            played.append({"guess": guess, "low": low, "high": high, "answer": answer})
        if terminated or truncated:
            break
    return played


def read_strategy(records: Iterable[Mapping[str, Any]], env_kwargs: Mapping[str, Any] = PLAIN_KWARGS) -> dict:
    """What a player did over `records`: openings, steps after each answer, guesses per win, halving.

    Example:
        >>> s = read_strategy([])
        >>> s["episodes"], s["openings"]
        (0, [])
    """
    openings: Counter[int] = Counter()
    after: dict[str, list[int]] = {"low": [], "high": []}
    wins: list[int] = []
    offsets: list[float] = []
    near_middle = 0
    episodes = 0
    for record in records:
        episodes += 1
        guesses = replay_guesses(record, env_kwargs)
        if not guesses:
            continue
        openings[guesses[0]["guess"]] += 1
        for prev, cur in zip(guesses, guesses[1:], strict=False):
            if prev["answer"] in after:
                after[prev["answer"]].append(cur["guess"] - prev["guess"])
        for g in guesses:
            size = g["high"] - g["low"] + 1
            middle = (g["low"] + g["high"]) / 2
            offsets.append(abs(g["guess"] - middle) / size)
            near_middle += abs(g["guess"] - middle) <= 1
        if guesses[-1]["answer"] == "correct":
            wins.append(len(guesses))
    return {
        "episodes": episodes,
        "openings": openings.most_common(3),
        "after_low": (
            statistics.median(after["low"]) if after["low"] else None,
            Counter(after["low"]).most_common(3),
        ),
        "after_high": (
            statistics.median(after["high"]) if after["high"] else None,
            Counter(after["high"]).most_common(3),
        ),
        "median_guesses_per_win": statistics.median(wins) if wins else None,
        "wins": len(wins),
        "offset_from_middle": sum(offsets) / len(offsets) if offsets else None,
        "near_middle": near_middle / len(offsets) if offsets else None,
        "guesses": len(offsets),
    }


def strategy_line(strategy: Mapping[str, Any]) -> str:
    """One paragraph a reader can check against the episodes."""

    def counts(pairs: list) -> str:
        return ", ".join(f"{value:+d}" if isinstance(value, int) else str(value) for value, _ in pairs) or "-"

    def opening(pairs: list) -> str:
        return ", ".join(f"{value} ({n})" for value, n in pairs) or "-"

    n = strategy["episodes"]
    offset, near = strategy["offset_from_middle"], strategy["near_middle"]
    return (
        f"opens with {opening(strategy['openings'])} of {n}; after 'too low' steps "
        f"{strategy['after_low'][0]} (median; most often {counts(strategy['after_low'][1])}), after 'too high' "
        f"{strategy['after_high'][0]} (most often {counts(strategy['after_high'][1])}); median guesses per win "
        f"{strategy['median_guesses_per_win']} ({strategy['wins']} wins); distance from the middle of the "
        f"allowed range {'-' if offset is None else f'{offset:.2f}'} of its size (binary search ~0), guesses "
        f"within one of the middle {'-' if near is None else f'{near:.0%}'}"
    )


def episode_line(record: Mapping[str, Any]) -> str:
    """One episode as played: the seed, won or lost, then each reply (A) and the env's answer.

    Example:
        >>> episode_line({"seed": 7, "success": True, "messages": [
        ...     {"role": "user", "content": "Guess a number."},
        ...     {"role": "assistant", "content": "10"},
        ...     {"role": "user", "content": "Correct! The number was 10. You used 1 guesses."}]})
        '7, won: A `10` · Correct'
    """
    parts = []
    started = False
    for message in record.get("messages", []):
        text = " ".join(str(message.get("content") or "").split())
        if message.get("role") == "assistant":
            started = True
            parts.append(f"A `{text}`")
        elif started:
            lowered = text.lower()
            answer = next(
                (word for word in ("too low", "too high", "correct", "no guesses left") if word in lowered),
                None,
            )
            parts.append(
                answer.capitalize() if answer in ("correct", "no guesses left") else answer or text[:60]
            )
    return f"{record.get('seed')}, {'won' if record.get('success') else 'lost'}: " + " · ".join(parts)


def main(argv: list[str] | None = None) -> int:
    """Print the strategy of each saved file (and, with --episodes N, its first N episodes as played)."""
    args = list(argv if argv is not None else sys.argv[1:])
    shown = 0
    if "--episodes" in args:
        at = args.index("--episodes")
        shown = int(args[at + 1])
        del args[at : at + 2]
    paths = [Path(p) for p in args]
    if not paths or any(a in ("-h", "--help") for a in args):
        print(__doc__)
        return 2
    for path in paths:
        records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        print(f"{path}: {strategy_line(read_strategy(records))}")
        for record in records[:shown]:
            print(f"- {episode_line(record)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
