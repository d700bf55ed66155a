"""The trivial players beside a model: the env's random player and its scripted expert, on given seeds.

A learning claim means little until it is put next to what a player that ignores the feedback
(`random_action`) and one that plays the task well (`expert_action`) score on the same seeds, under
the same turn cap.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from envs.baselines.behaviour import pool_behaviour

PLAYERS = ("random", "expert")
#: The env method each player's moves come from.
PLAYER_METHODS = {"random": "random_action", "expert": "expert_action"}


#: What every caller of `random_action(rng)` passes (the baseline players, the warm start, `envs check`).
RNG_NOTE = (
    "random_action(rng) gets a stdlib random.Random (randint, choice), not numpy's Generator; "
    "numpy: default_rng(rng.getrandbits(64))"
)


def random_move(game: Any, rng: random.Random) -> Any:
    """The env's `random_action(rng)`, drawn from a stdlib `random.Random`: the one way it is called.

    An env written against numpy's Generator (``rng.integers``) fails with an AttributeError that says
    which generator it was given and how to get numpy draws from it (`RNG_NOTE`).

    Args:
        game: the unwrapped env.
        rng: the episode's generator, ``random.Random(seed)``.

    Returns:
        The move `random_action` returned.

    >>> class NumpyStyle:
    ...     def random_action(self, rng):
    ...         return str(rng.integers(1, 21))
    >>> random_move(NumpyStyle(), random.Random(0))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    AttributeError: 'Random' object has no attribute 'integers': random_action(rng) gets a stdlib random.Random...
    """
    try:
        return game.random_action(rng)
    except AttributeError as exc:
        if getattr(exc, "obj", None) is not rng:
            raise
        raise AttributeError(f"{exc}: {RNG_NOTE}") from exc


@dataclass
class BaselineResult:
    """How one trivial player fared over a list of seeds."""

    player: str
    episodes: int
    successes: int
    mean_return: float
    behaviour: dict[str, float] = field(default_factory=dict)

    @property
    def success_rate(self) -> float:
        """Successes over episodes (0.0 for no episodes)."""
        return self.successes / self.episodes if self.episodes else 0.0


def play_baseline(
    env_id: str,
    player: str,
    seeds: Sequence[int],
    env_kwargs: dict[str, Any] | None = None,
    max_turns: int | None = None,
    make: Callable[[], Any] | None = None,
) -> BaselineResult | None:
    """Play `player` ("random" or "expert") once on each seed; None when the env has no such player
    (its method is missing, as a served env's `random_action`, or raises NotImplementedError).

    Args:
        env_id: A registered env id.
        player: "random" (the env's `random_action`, drawn from `random.Random(seed)`) or "expert".
        seeds: The episodes' seeds, e.g. the seeds a model was evaluated on.
        env_kwargs: Constructor kwargs, as the model's episodes had them.
        max_turns: At most this many actions per episode (a model's turn cap), else the env's own end.
        make: Builds the env instead of `envs.make(env_id, **env_kwargs)` (`envs check` watches its calls).

    Returns:
        The player's successes, mean return and pooled behaviour rates, or None.

    >>> r = play_baseline("guess-number-v0", "expert", range(20), {"difficulty": "easy"})
    >>> r.success_rate, r.behaviour["follow_rate"]
    (1.0, 1.0)
    """
    import envs
    from envs.baselines.behaviour import behaviour_rates_of

    if player not in PLAYERS:
        raise ValueError(f"unknown player {player!r}; choose from {', '.join(PLAYERS)}")
    env = make() if make is not None else envs.make(env_id, **(env_kwargs or {}))
    game = env.unwrapped
    # A served env (RemoteEnv) carries the expert over the wire but has no random player.
    if getattr(game, PLAYER_METHODS[player], None) is None:
        env.close()
        return None
    successes, total, counts = 0, 0.0, []
    try:
        for seed in seeds:
            env.reset(seed=int(seed))
            rng = random.Random(int(seed))
            info: dict = {}
            last_behaviour = None
            for _ in range(max_turns or 10_000):
                try:
                    action = random_move(game, rng) if player == "random" else game.expert_action()
                except NotImplementedError:
                    return None
                _, reward, terminated, truncated, info = env.step(action)
                total += reward
                last_behaviour = info.get("behaviour", last_behaviour)
                if terminated or truncated:
                    break
            successes += bool(info.get("success"))
            counts.append(last_behaviour)
    finally:
        env.close()
    n = len(seeds)
    return BaselineResult(
        player, n, successes, total / n if n else 0.0, pool_behaviour(counts, behaviour_rates_of(env_id))
    )
