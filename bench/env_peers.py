"""Guess-the-number loops of peer libraries, for `bench/env_throughput.py --peers` (each row needs its package).

Every loop plays 1..100 with 9 guesses by binary search, reading the higher/lower answer from what the
library returns, like the turngym rows. A peer that is not installed has no rows; install them with
`pip install gem-llm skyrl-gym textarena==0.7.4` (a separate venv keeps them out of turngym's).

- GEM (`gem-llm`): its own `GuessTheNumberEnv`, through `gem.make`.
- TextArena (`textarena`): its own `GuessTheNumber-v0-raw` (no wrappers), through `textarena.make`.
- SkyRL-gym (`skyrl-gym`): it ships no game env, only the `BaseTextEnv` its users subclass, so its row
  is the bench's bare game (bench/bare_guess_number.py) in that class, made by `skyrl_gym.make` and
  answering with its step-output dict: it measures the library's make and step plumbing around the
  cheapest possible game, not a game of its own.

Each library has its own episode loop, written against its step and answer directly, rather than one
loop calling per-library step and read functions: such a call on every step would be charged to the
peers and not to turngym's rows, whose loops call `env.step` directly too.
"""

from __future__ import annotations

import importlib.util
import random
import time
from collections.abc import Callable

from bare_guess_number import BareGuessNumber

Row = Callable[[int], tuple[int, float]]
clock: Callable[[], float] = time.process_time
LOW, HIGH, GUESSES = 1, 100, 9


def installed(module: str) -> bool:
    """Whether `module` can be imported (without importing it)."""
    return importlib.util.find_spec(module) is not None


def _gem_episode(env) -> int:
    low, high, steps = LOW, HIGH, 0
    while True:
        guess = (low + high) // 2
        observation, _, terminated, truncated, _ = env.step(f"\\boxed{{{guess}}}")
        steps += 1
        if terminated or truncated:
            return steps
        if "higher" in observation:
            low = guess + 1
        else:
            high = guess - 1


def _loops(make: Callable[[], object], reset: Callable, play: Callable[[object], int]) -> tuple[Row, Row]:
    """(reused, make per episode) loops of one library: `reset(env, seed)` takes None after the first reset."""

    def reused(episodes: int) -> tuple[int, float]:
        env = make()
        reset(env, 0)
        steps = 0
        start = clock()
        for _ in range(episodes):
            reset(env, None)
            steps += play(env)
        return steps, clock() - start

    def per_episode(episodes: int) -> tuple[int, float]:
        steps = 0
        start = clock()
        for seed in range(episodes):
            env = make()
            reset(env, seed)
            steps += play(env)
        return steps, clock() - start

    return reused, per_episode


def gem_loops() -> tuple[Row, Row]:
    """GEM's own GuessTheNumber through `gem.make`; `reset(seed=...)`."""
    import gem

    return _loops(
        lambda: gem.make("game:GuessTheNumber-v0-hard", min_number=LOW, max_number=HIGH, max_turns=GUESSES),
        lambda env, seed: env.reset(seed=seed),
        _gem_episode,
    )


def _textarena_episode(env) -> int:
    low, high, steps = LOW, HIGH, 0
    history = env.state.game_state["guess_history"]
    while True:
        guess = (low + high) // 2
        done, _ = env.step(f"[{guess}]")
        steps += 1
        if done:
            return steps
        if history[-1][1] == "higher":
            low = guess + 1
        else:
            high = guess - 1


def textarena_loops() -> tuple[Row, Row]:
    """TextArena's own GuessTheNumber (raw: no wrappers) through `textarena.make`; `reset(num_players=1)`."""
    import textarena

    return _loops(
        lambda: textarena.make("GuessTheNumber-v0-raw", min_number=LOW, max_number=HIGH, max_turns=GUESSES),
        lambda env, seed: env.reset(num_players=1, seed=seed),
        _textarena_episode,
    )


_SKYRL_ID = "bench-guess-number"


def _skyrl_register() -> None:
    import skyrl_gym
    from skyrl_gym.envs.base_text_env import BaseTextEnv

    if _SKYRL_ID in skyrl_gym.envs.registration.registry:
        return

    class SkyRLGuessNumber(BaseTextEnv):
        """The bench's bare game (bench/bare_guess_number.py) as a SkyRL-gym text env."""

        def __init__(self, env_config=None, extras=None):
            super().__init__()
            self.max_turns = GUESSES
            self.game = BareGuessNumber()
            self.game.reset(random.Random((extras or {})["seed"]))

        def step(self, action: str):
            message, reward, done = self.game.step(action)
            self.turns += 1
            return {
                "observations": [message],
                "reward": reward,
                "done": done or self.game.left == 0,
                "metadata": {},
            }

    skyrl_gym.register(id=_SKYRL_ID, entry_point=SkyRLGuessNumber)


def _skyrl_episode(env) -> int:
    low, high, steps = LOW, HIGH, 0
    while True:
        guess = (low + high) // 2
        output = env.step(str(guess))
        steps += 1
        if output["done"]:
            return steps
        if "higher" in output["observations"][0]["content"]:
            low = guess + 1
        else:
            high = guess - 1


def skyrl_make_per_episode(episodes: int) -> tuple[int, float]:
    """`skyrl_gym.make` per episode; the game draws its secret from `random.Random(episode)`, as the bare fresh row."""
    import skyrl_gym

    _skyrl_register()
    steps = 0
    start = clock()
    for seed in range(episodes):
        env = skyrl_gym.make(_SKYRL_ID, extras={"seed": seed})
        env.init([])
        steps += _skyrl_episode(env)
    return steps, clock() - start


def peer_rows() -> list[tuple[str, Row]]:
    """(name, loop) of every installed peer; SkyRL-gym has no reused row (its envs are built per episode)."""
    rows: list[tuple[str, Row]] = []
    for name, module, loops in (("GEM", "gem", gem_loops), ("TextArena", "textarena", textarena_loops)):
        if installed(module):
            reused, per_episode = loops()
            rows += [(f"{name} env reused", reused), (f"{name} make() per episode", per_episode)]
    if installed("skyrl_gym"):
        rows += [("SkyRL-gym make() per episode", skyrl_make_per_episode)]
    return rows
