"""A custom reward on top of an env's own, used in training: RewardShaping around guess-number-v0.

    python examples/reward_shaping.py --show              # one expert episode: env reward vs shaped reward
    python examples/reward_shaping.py                     # train on it (CPU: embedded tiny model)
    python -m trainer.run env.id=guess-number-shaped-v0 turngym.import_modules=[examples.reward_shaping]

Training builds its envs by id in every Ray worker (``envs.make(env_id, **env_kwargs)``), so a reward
change reaches training as a registered env id: this module registers ``guess-number-shaped-v0``,
guess-number-v0 wrapped in ``envs.wrappers.RewardShaping``, and ``turngym.import_modules`` makes every
training process import it. The env's own reward stays in ``info["raw_reward"]``.
"""

from __future__ import annotations

import sys
from typing import Any

import envs
from envs.wrappers import RewardShaping

BASE_ID = "guess-number-v0"
SHAPED_ID = "guess-number-shaped-v0"
# Charged every turn, so a shorter win pays more.
TURN_COST = 0.02
# Added on a win, on top of the env's own reward.
WIN_BONUS = 0.5


def win_bonus(reward: float, info: dict[str, Any]) -> float:
    """The custom term: the reward RewardShaping computed (env reward - turn cost), plus a bonus for a win."""
    return reward + (WIN_BONUS if info.get("success") else 0.0)


def shaped_guess_number(**kwargs: Any) -> RewardShaping:
    """guess-number-v0 as registered (its defaults, plus these kwargs), its rewards reshaped."""
    base = envs.spec(BASE_ID)
    return RewardShaping(base.load()(**{**base.kwargs, **kwargs}), turn_cost=TURN_COST, fn=win_bonus)


# Levels like the base env's, so `env.difficulty=easy` (and the curriculum) apply to the shaped id too.
shaped_guess_number.difficulties = envs.spec(BASE_ID).load().difficulties
_base = envs.spec(BASE_ID)
envs.register(
    SHAPED_ID,
    # A 'module:attr' string: the same spec whether this file runs as a script or is imported again.
    "examples.reward_shaping:shaped_guess_number",
    category=_base.category,
    description=f"{BASE_ID} with a turn cost of {TURN_COST} and a win bonus of {WIN_BONUS}.",
    max_turns=_base.max_turns,
    format_penalty=_base.format_penalty,
)


def show(seed: int = 0) -> None:
    """Play one expert episode in both envs and print the per-turn rewards side by side."""
    plain, shaped = envs.make(BASE_ID, difficulty="easy"), envs.make(SHAPED_ID, difficulty="easy")
    plain.reset(seed=seed)
    shaped.reset(seed=seed)
    done, turn = False, 0
    while not done:
        turn += 1
        action = plain.unwrapped.expert_action()
        _, raw, t1, u1, _ = plain.step(action)
        _, reward, t2, u2, info = shaped.step(action)
        print(
            f"turn {turn}: guess {action:>3}  env reward {raw:.2f}  shaped {reward:.2f}  (raw {info['raw_reward']:.2f})"
        )
        done = t1 or u1
        assert (t1, u1) == (t2, u2)


if __name__ == "__main__":
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # `examples.reward_shaping` importable
    if "--show" in sys.argv[1:]:
        show()
        sys.exit(0)
    from trainer.run import main

    defaults = [
        f"env.id={SHAPED_ID}",
        "turngym.import_modules=[examples.reward_shaping]",
        "trainer.total_training_steps=5",
    ]
    sys.exit(main(defaults + sys.argv[1:]))
