"""Steps/s of guess-number (reset + expert steps) through envs.make, beside a bare-Python loop of the same game.

Run: python bench/env_throughput.py [--episodes N]
"""

from __future__ import annotations

import argparse
import random
import time

import envs


class BareGuessNumber:
    """The same game as plain Python: seeded secret, text guesses read as ints, feedback messages as dicts."""

    def reset(self, rng: random.Random) -> None:
        """New secret and search bounds."""
        self.secret = rng.randint(1, 100)
        self.low, self.high, self.left = 1, 100, 9

    def step(self, text: str) -> tuple[dict, float, bool]:
        """Read the guess, compare, answer."""
        guess = int(text.strip())
        self.left -= 1
        if guess == self.secret:
            return {"role": "user", "content": f"Correct! The number was {self.secret}."}, 1.0, True
        if guess < self.secret:
            self.low = guess + 1
            word = "higher"
        else:
            self.high = guess - 1
            word = "lower"
        return (
            {"role": "user", "content": f"{guess} is wrong. The number is {word}. {self.left} guesses left."},
            0.0,
            False,
        )

    def expert(self) -> str:
        """Binary search."""
        return str((self.low + self.high) // 2)


def bare_python(episodes: int) -> tuple[int, float]:
    """reset + step of the plain-Python game with the same expert."""
    game, rng = BareGuessNumber(), random.Random(0)
    steps = 0
    start = time.perf_counter()
    for _ in range(episodes):
        game.reset(rng)
        while True:
            _, _, done = game.step(game.expert())
            steps += 1
            if done:
                break
    return steps, time.perf_counter() - start


def turngym_env(episodes: int) -> tuple[int, float]:
    """reset + step with the scripted expert through the full wrapper stack of `envs.make`."""
    env = envs.make("guess-number-v0")
    env.reset(seed=0)
    env.step("50")  # warm-up: the first step builds the game's action tool (imports pydantic)
    expert = env.unwrapped.expert_action
    steps = 0
    start = time.perf_counter()
    for _ in range(episodes):
        env.reset()
        while True:
            _, _, terminated, truncated, _ = env.step(expert())
            steps += 1
            if terminated or truncated:
                break
    return steps, time.perf_counter() - start


def main() -> None:
    """Print steps/s of both loops and their ratio (best of 3 runs each)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--episodes", type=int, default=20_000)
    args = parser.parse_args()
    rates = {}
    for name, fn in [("bare python", bare_python), ("turngym env", turngym_env)]:
        best = 0.0
        for _ in range(3):
            steps, seconds = fn(args.episodes)
            best = max(best, steps / seconds)
        rates[name] = best
        print(f"{name:<12} {best:>12,.0f} steps/s")
    print(f"ratio turngym/bare: {rates['turngym env'] / rates['bare python']:.3f} (goal >= 0.6)")


if __name__ == "__main__":
    main()
