"""Every env call `envs check` makes, watched: each start and return is told (so a call that never
returns can be stopped from outside), and each return value is held to the env contract.

An env under check is code the checker does not trust. It was seen to pass with a reward that was a
string (on turns the hostile inputs never reached), so the types are checked on every return of
`reset`, `step`, `expert_action` and `random_action`, whichever check made the call, not only on the
hostile inputs' first step.
"""

from __future__ import annotations

import functools
import json
import math
import numbers
from collections.abc import Callable
from typing import Any

WATCHED = ("reset", "step", "expert_action", "random_action", "close")


class ContractBreach(Exception):
    """An env call returned a value of the wrong type or shape (a string reward, a step without info)."""


def step_problem(space: Any, result: Any) -> str | None:
    """What is wrong with a `step` return value, or None: five values, the observation in `space`, a
    finite real reward (not a bool, not a string), bool end flags and an info dict.

    >>> step_problem(None, ([], "1.0", False, False, {}))
    "the reward is '1.0' (str), not a finite number"
    """
    if not isinstance(result, tuple) or len(result) != 5:
        return f"step returned {_shown(result)}, not (observation, reward, terminated, truncated, info)"
    obs, reward, terminated, truncated, info = result
    if space is not None and not space.contains(obs):
        return f"the observation is not in the observation space: {_shown(obs)}"
    if isinstance(reward, bool) or not isinstance(reward, numbers.Real) or not math.isfinite(reward):
        return f"the reward is {reward!r} ({type(reward).__name__}), not a finite number"
    if not isinstance(terminated, bool) or not isinstance(truncated, bool):
        return f"terminated/truncated are {terminated!r}/{truncated!r}, not bools"
    if not isinstance(info, dict):
        return f"info is a {type(info).__name__}, not a dict"
    return None


def reset_problem(space: Any, result: Any) -> str | None:
    """What is wrong with a `reset` return value, or None: (observation in `space`, info dict).

    >>> reset_problem(None, ([], {})), reset_problem(None, [])
    (None, 'reset returned [], not (observation, info)')
    """
    if not isinstance(result, tuple) or len(result) != 2:
        return f"reset returned {_shown(result)}, not (observation, info)"
    obs, info = result
    if space is not None and not space.contains(obs):
        return f"the opening observation is not in the observation space: {_shown(obs)}"
    if not isinstance(info, dict):
        return f"reset's info is a {type(info).__name__}, not a dict"
    return None


def _move_problem(_space: Any, move: Any) -> str | None:
    # A player's move is what a model would send: text, or an assistant message.
    if isinstance(move, (str, dict)):
        return None
    return f"the move is {_shown(move)} ({type(move).__name__}), not text or a message"


_PROBLEMS: dict[str, Callable[[Any, Any], str | None]] = {
    "reset": reset_problem,
    "step": step_problem,
    "expert_action": _move_problem,
    "random_action": _move_problem,
}


def _shown(value: Any) -> str:
    return json.dumps(value, default=repr)[:80]


class CallWatch:
    """Wraps an env's calls (on the env itself and on its unwrapped core) to tell each start and return
    to `tell`, and to check each return value.

    A value of the wrong type is kept in `breaches` and raised as `ContractBreach`, so the check that
    made the call fails even if a wrapper above swallowed the exception.

    Args:
        tell: Called with ``"step started"``, ``"step returned"``, ... (the child's heartbeat).
    """

    def __init__(self, tell: Callable[[str], None]):
        self.tell = tell
        self.breaches: list[str] = []

    def watch(self, env: Any) -> Any:
        """`env`, its calls and its unwrapped core's calls watched from now on; returns `env`."""
        layers = [env] if env.unwrapped is env else [env, env.unwrapped]
        for layer in layers:
            space = getattr(layer, "observation_space", None)
            for name in WATCHED:
                method = getattr(layer, name, None)
                if method is None or getattr(method, "_watched", False):
                    continue
                try:  # per instance, so wrappers and gymnasium's checker reach the watched call too
                    setattr(layer, name, self._watched(name, method, space))
                except (AttributeError, TypeError):
                    continue  # a slotted or frozen env: its calls are bounded by the child's deadline alone
        return env

    def make(self, build: Callable[[], Any]) -> Any:
        """`build()` (an `envs.make`), told as a call, its env watched."""
        self.tell("make started")
        env = build()
        self.tell("make returned")
        return self.watch(env)

    def _watched(self, name: str, method: Callable[..., Any], space: Any) -> Callable[..., Any]:
        check = _PROBLEMS.get(name)

        @functools.wraps(method)
        def call(*args: Any, **kwargs: Any) -> Any:
            self.tell(f"{name} started")
            out = method(*args, **kwargs)
            self.tell(f"{name} returned")
            problem = check(space, out) if check is not None else None
            if problem is not None:
                problem = f"{name}: {problem}"
                self.breaches.append(problem)
                raise ContractBreach(problem)
            return out

        call._watched = True  # type: ignore[attr-defined]
        return call
