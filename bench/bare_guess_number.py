"""The benchmarks' baseline game: guess-the-number as plain Python, and the same game as a turngym TextEnv.

`BareGuessNumber` is what `bench/env_throughput.py` divides by. `BareGuessNumberEnv` runs that very
game inside turngym's plumbing (`envs.make`, the `EpisodeLimits` layer, `TextEnv.step`'s reading and
bookkeeping), so the difference between the two is the framework's cost alone; `guess-number-v0`'s
own features (any reply read, reward shaping, difficulties) come on top.
"""

from __future__ import annotations

import random

from envs.core.text_env import TextEnv
from turngym.chat.message import Message

#: The id `register_bare_env` gives `BareGuessNumberEnv`.
BARE_ENV_ID = "bench-bare-guess-number-v0"


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


class BareGuessNumberEnv(TextEnv):
    """`BareGuessNumber` as a TextEnv: a seeded reset builds `random.Random(seed)`, as the fresh bare loop does."""

    _rng: random.Random | None = None

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """TextEnv's reset; a seed (or the first reset) builds the game's `random.Random`, later ones go on."""
        if seed is not None or self._rng is None:
            self._rng = random.Random(seed)
        return super().reset(seed=seed, options=options)

    def _reset(self, options: dict) -> tuple[list[Message], dict]:
        self.game = BareGuessNumber()
        self.game.reset(self._rng)
        return [{"role": "user", "content": "Guess a whole number in 1..100; you have 9 guesses."}], {}

    def _respond_text(self, text: str):
        try:
            message, reward, done = self.game.step(text)
        except ValueError:  # not a number: a format error, as a TextEnv answers any reply it cannot read
            return self._format_error("reply with one whole number")
        # The bare game ends a lost game by running out of guesses, which is not a win: truncated.
        return [message], reward, done, not done and self.game.left == 0, {}

    def _respond(self, turn):
        return self._respond_text(turn.content)

    def expert_action(self) -> str:
        """The bare game's binary search."""
        return self.game.expert()


def register_bare_env() -> str:
    """Register `BareGuessNumberEnv` (once) and return its id."""
    import envs

    try:
        envs.spec(BARE_ENV_ID)
    except envs.UnknownEnvError:
        envs.register(BARE_ENV_ID, entry_point=BareGuessNumberEnv, max_turns=20)
    return BARE_ENV_ID
