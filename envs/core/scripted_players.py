"""The scripted players an env may offer beside the agent: an expert and a random player.

They are not part of the env contract (`TextEnv` does not declare them). An env that has one implements
the matching protocol, and the callers (the baselines, the warm start's demonstrations, `envs check`, the
env server) ask `isinstance(env.unwrapped, ScriptedExpert)` rather than catch a base class's
NotImplementedError. A forwarder that cannot know in advance whether the env behind it has one (a wrapper,
a served env) still answers NotImplementedError when it has none, and so does an env whose expert covers
only some of its settings; `expert_move` and `random_move` give that one answer for every case.
"""

from __future__ import annotations

import random
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class ScriptedExpert(Protocol):
    """An env with a scripted expert: `expert_action()` is its next reply, for baselines and demonstrations."""

    def expert_action(self) -> str:
        """The scripted expert's next reply (text) in the current episode."""
        ...


@runtime_checkable
class RandomPlayer(Protocol):
    """An env with a random player: `random_action(rng)` is a uniformly random legal-looking move.

    `rng` is a stdlib ``random.Random`` seeded by the caller per episode (the baseline players, the warm
    start and ``envs check`` all pass one): draw with ``rng.randint``, ``rng.choice``, ``rng.random``. It is
    not the env's own ``np_random`` (numpy's Generator, which has ``integers``); for numpy draws use
    ``numpy.random.default_rng(rng.getrandbits(64))``.

    >>> import envs, random
    >>> env = envs.make("guess-number-v0", difficulty="easy")
    >>> _ = env.reset(seed=0)
    >>> isinstance(env.unwrapped, RandomPlayer), env.unwrapped.random_action(random.Random(0)).isdigit()
    (True, True)
    """

    def random_action(self, rng: random.Random) -> str:
        """A random move (the assistant's reply text), drawn from `rng`."""
        ...


@runtime_checkable
class ScriptedPlayers(ScriptedExpert, RandomPlayer, Protocol):
    """An env with both scripted players (the games): the expert and the random player."""


def expert_move(game: Any) -> str:
    """The scripted expert's next reply in `game`; NotImplementedError when it has no scripted expert.

    >>> expert_move(object())
    Traceback (most recent call last):
    NotImplementedError: object has no scripted expert
    """
    if not isinstance(game, ScriptedExpert):
        raise NotImplementedError(f"{type(game).__name__} has no scripted expert")
    return game.expert_action()
