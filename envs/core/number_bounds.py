"""The one table of bounds on the numbers an env is built with, and on the rewards a served env answers.

A number that enters an env (an `envs.make` keyword, a served env's client kwarg, a dataset row's
kwargs, `env.kwargs.*` on the trainer's command line) is finite and inside its bound, or the env is not
built: `envs.make("maze-v0", format_penalty=1e300)` used to pay -1e300 per unreadable reply, and
`ruled_out_penalty=inf` (or `True`) was taken as it came. A full reward is 1 in every built-in env, so a
penalty or shaping term past 100 (and a reward past 1e6, which float32 sums still hold exactly enough)
is a mistake or an attack, never a setting.

Every env looks its numbers up here by keyword (`check_env_numbers`); the registry checks the ones it
applies itself (`max_turns`, `format_penalty`, the turn limits) once per distinct `make` call, and the
remote clients check each reward a server answers (`check_reward`). What a *client* of a served env may
ask for is narrower still (`CLIENT_MAX_FORMAT_PENALTY`, `CLIENT_MAX_TURNS`, see
`envs.registry.client_kwargs`).
"""

from __future__ import annotations

import math
from typing import Any

from turngym.common.number_bounds import Bound

_PENALTY = Bound(whole=False, low=0, high=100)  # subtracted: at most 100 full rewards
_SHARE = Bound(whole=False, low=0, high=1)  # a weight, decay or shaping share of a full reward
_SECONDS = Bound(whole=False, low=0, high=3600, open_low=True)
_CALLS = Bound(whole=True, low=0, high=1000)
_TRIES = Bound(whole=True, low=1, high=1000)
_CHARS = Bound(whole=True, low=1, high=10_000_000)

#: keyword -> what it accepts, in every env that takes it (and in `envs.make` / `register`).
ENV_NUMBERS: dict[str, Bound] = {
    # What the registry applies to every env (`make`, `register`, `TextEnv.set_turn_limits`).
    "max_turns": Bound(whole=True, low=1, high=100_000),
    "format_penalty": _PENALTY,
    "max_action_chars": _CHARS,
    "max_tool_calls_per_turn": Bound(whole=True, low=1, high=10_000, nullable=True),
    "max_tool_time_s": Bound(whole=False, low=0, high=86_400, open_low=True, nullable=True),
    # Rewards, penalties and shaping of the built-in envs.
    "ruled_out_penalty": _PENALTY,  # guess-number
    "progress_reward": _SHARE,  # guess-number, maze, wordle (training-only shaping)
    "failed_run_penalty": _PENALTY,  # code-sandbox
    "useful_call_reward": _SHARE,  # calculator-qa, search-qa
    "decay": _SHARE,  # math-tutor
    "elicit_weight": _SHARE,  # shop-assistant
    # Difficulty knobs a curriculum turns (null: the difficulty's own value).
    "size": Bound(whole=True, low=2, high=12, nullable=True),  # maze: rooms per side
    "wall_density": Bound(whole=False, low=0, high=1, nullable=True),  # maze: share of walls kept
    "pool": Bound(whole=True, low=1, high=100_000, nullable=True),  # wordle: answers drawn from
    "revealed": Bound(whole=True, low=0, high=4, nullable=True),  # wordle: letters given at the start
    "high": Bound(whole=True, low=2, high=1_000_000, nullable=True),  # guess-number: range 1..high
    "blunder_rate": Bound(whole=False, low=0, high=1, nullable=True),  # tic-tac-toe: opponent's random moves
    # Counts.
    "max_runs": _CALLS,  # code-sandbox
    "max_rewarded_calls": _CALLS,  # calculator-qa, search-qa
    "max_attempts": _TRIES,  # math-tutor
    "max_results": _TRIES,  # shop-assistant
    "opponent_attempts": _TRIES,  # textarena
    "seat": Bound(whole=True, low=0, high=1),  # textarena: one- and two-player games
    # Sandboxes and servers.
    "run_timeout_s": _SECONDS,
    "grade_timeout_s": _SECONDS,
    "per_call_timeout_s": _SECONDS,
    "per_test_timeout_s": _SECONDS,
    "connect_timeout_s": _SECONDS,  # openenv
    "message_timeout_s": _SECONDS,  # openenv
    "memory_mb": Bound(whole=True, low=16, high=1_048_576),
    "max_output_chars": _CHARS,
    # One step's reward as a served env answers it (`RemoteEnv`, `OpenEnvEnv`).
    "reward": Bound(whole=False, low=-1e6, high=1e6),
}

_REWARD = ENV_NUMBERS["reward"]

#: The dearest format error a client of a served env (or a dataset row) may ask for: beyond it one bad
#: reply outweighs any return an env pays. An operator's own dearer value stays reachable.
CLIENT_MAX_FORMAT_PENALTY = 10.0
#: The most turns a client may ask for, also where the env sets no limit of its own.
CLIENT_MAX_TURNS = 10_000


def env_number_problem(name: str, value: Any) -> str | None:
    """None when `value` is fine for keyword `name` (or `name` has no bound), else the one-line reason.

    Args:
        name: the keyword, e.g. `format_penalty`.
        value: the value given.

    Returns:
        None, or e.g. `format_penalty=1e+300 is out of range; give a number in [0, 100]`.
    """
    bound = ENV_NUMBERS.get(name)
    if bound is None:
        if isinstance(value, float) and not math.isfinite(value):
            return f"{name}={value} is not a finite number"
        return None
    return bound.problem(name, value)


def check_env_numbers(owner: str, **values: Any) -> None:
    """Raise ValueError in one line, naming `owner` and the keyword, for the first value out of its bound.

    Keywords without a bound in `ENV_NUMBERS` pass when they are not a NaN or infinite float.

    Args:
        owner: who is being built (an env id or class name), for the message.
        **values: the keywords and their values.

    Example:
        >>> check_env_numbers("maze-v0", format_penalty=0.1, max_turns=50)
        >>> check_env_numbers("GuessNumberEnv", ruled_out_penalty=float("inf"))
        Traceback (most recent call last):
        ...
        ValueError: GuessNumberEnv: ruled_out_penalty=inf is not a number; give a number in [0, 100]
    """
    for name, value in values.items():
        problem = env_number_problem(name, value)
        if problem is not None:
            raise ValueError(f"{owner}: {problem}")


def check_reward(reward: Any) -> str | None:
    """None when a served env's reward is a finite number within `ENV_NUMBERS["reward"]`, else why not.

    >>> check_reward(1.0), check_reward(3e38)
    (None, 'reward=3e+38 is out of range; give a number in [-1000000, 1000000]')
    """
    if type(reward) is float and _REWARD.low <= reward <= _REWARD.high:  # the common case, checked fast
        return None
    return _REWARD.problem("reward", reward)
