"""Every wrapper's hooks run on every reset and every step: a user's subclass of each public wrapper, put
in the stack `envs.make` builds (the spec's `additional_wrappers`), counts them, with and without kwargs."""

import asyncio
import random

import pytest
from gymnasium.envs.registration import WrapperSpec

import envs
from envs.wrappers import ActionFormat, EpisodeLimits, MaxTurns, RewardShaping, TextWrapper


class _Counting:
    """Counts the hooks; each subclass below puts it before one public wrapper."""

    resets = 0
    steps = 0

    def on_reset(self, messages, info):
        self.resets += 1
        return super().on_reset(messages, info)

    def on_step(self, messages, reward, terminated, truncated, info):
        self.steps += 1
        return super().on_step(messages, reward, terminated, truncated, info)


class CountingTextWrapper(_Counting, TextWrapper):
    def constructor_kwargs(self):
        return {}


class CountingEpisodeLimits(_Counting, EpisodeLimits):
    pass


class CountingMaxTurns(_Counting, MaxTurns):
    pass


class CountingActionFormat(_Counting, ActionFormat):
    pass


class CountingRewardShaping(_Counting, RewardShaping):
    pass


WRAPPERS = [
    (CountingTextWrapper, {}),
    (CountingEpisodeLimits, {"max_turns": 4, "penalty": 0.2}),
    (CountingMaxTurns, {"max_turns": 3}),
    (CountingActionFormat, {"penalty": 0.3, "max_consecutive": 2}),
    (CountingRewardShaping, {"scale": 2.0, "turn_cost": 0.1}),
    # Settings past the defaults too: the layer make applies itself is this class's base.
    (
        CountingEpisodeLimits,
        {"max_turns": None, "penalty": 0.0, "message": "Bad: {error}", "max_consecutive": 3},
    ),
]
ACTIONS = ["50", "25", "75", "no idea", "1 2", "", "  12  ", "100", "x" * 50]


def _layer(env, cls):
    while not isinstance(env, cls):
        env = env.env
    return env


def _play(env, cls, seed: int) -> tuple[int, int]:
    """Resets and steps the layer of class `cls` played (a refusal after the end is no step)."""
    rng = random.Random(seed)
    resets = steps = 0
    for episode in range(4):
        env.reset(seed=seed * 10 + episode)
        resets += 1
        for _ in range(rng.randint(1, 12)):  # past the end too: refusals are no steps
            action = env.unwrapped.expert_action() if rng.random() < 0.4 else rng.choice(ACTIONS)
            result = asyncio.run(env.astep(action)) if rng.random() < 0.3 else env.step(action)
            steps += not result[4].get("episode_ended")
    layer = _layer(env, cls)
    assert (layer.resets, layer.steps) == (resets, steps)
    return resets, steps


@pytest.mark.parametrize(("cls", "settings"), WRAPPERS, ids=lambda v: getattr(v, "__name__", ""))
def test_a_subclass_of_each_wrapper_sees_every_reset_and_step_through_make(cls, settings):
    env_id = f"hooks-probe-{cls.__name__.lower()}-{len(settings)}-v0"
    wrapper = WrapperSpec(cls.__name__, f"{__name__}:{cls.__name__}", settings)
    envs.register(
        env_id,
        "envs.games.guess_number:GuessNumberEnv",
        category="test",
        description=f"guess-number under a {cls.__name__}",
        max_turns=6,
        additional_wrappers=[wrapper],
    )
    played = 0
    for seed in range(3):  # make(id) and make(id, **kwargs) again and again: the shortcut's builds too
        for kwargs in ({}, {"difficulty": "easy"}, {"difficulty": "easy", "max_turns": 2}):
            env = envs.make(env_id, **kwargs)
            assert type(env) is cls and type(env.env) is EpisodeLimits
            played += _play(env, cls, seed)[1]
    assert played > 50


@pytest.mark.parametrize(("cls", "settings"), WRAPPERS, ids=lambda v: getattr(v, "__name__", ""))
def test_a_subclass_of_each_wrapper_sees_every_reset_and_step_by_hand(cls, settings):
    for seed in range(3):
        _play(cls(envs.make("guess-number-v0", difficulty="easy"), **settings), cls, seed)
        _play(cls(envs.make("guess-number-v0").unwrapped, **settings), cls, seed)


def test_max_turns_and_action_format_are_settings_of_episode_limits():
    base = envs.make("guess-number-v0").unwrapped
    assert isinstance(MaxTurns(base, 2), EpisodeLimits) and isinstance(ActionFormat(base), EpisodeLimits)
    for cls in (MaxTurns, ActionFormat, EpisodeLimits, TextWrapper):
        # One step path: no public wrapper writes its own step or reset.
        assert "step" not in vars(cls) or cls is TextWrapper
        assert "reset" not in vars(cls) or cls is TextWrapper
    with pytest.raises(ValueError, match="give a penalty"):
        EpisodeLimits(base, max_turns=3, penalty=None, max_consecutive=2)
    with pytest.raises(ValueError, match="max_consecutive must be >= 1"):
        ActionFormat(base, max_consecutive=0)
