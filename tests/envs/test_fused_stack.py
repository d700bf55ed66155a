"""The stack `envs.make` builds (one EpisodeLimits layer, also when make only builds a call it resolved
before) plays as MaxTurns over ActionFormat by hand, and `step`'s shortcuts for plain replies as `astep`."""

import asyncio
import random

import pytest

import envs
from envs.wrappers import ActionFormat, EpisodeLimits, MaxTurns, RewardShaping

HOSTILE = [
    "",
    "   ",
    "abc",
    "1 2",
    "42 or 43",
    "²",
    "٣",
    "-5",
    "0050",
    "000000000000000000042",
    "  42  ",
    "4.5",
    "50\x00",
    "x" * 40000,
    "<tool_call>{not json</tool_call>",
    '<tool_call>{"name": "guess", "arguments": {"number": 50}}</tool_call>',
    '<tool_call>{"name": "nope", "arguments": {}}</tool_call>',
    None,
    123,
    {"role": "assistant", "content": "7"},
    {"role": "assistant", "content": "", "tool_calls": "bad"},
]

MOVES = ["up", "down\nleft", "right", "crane", "slate", "5", "b2", "1", "9"]


def _action(rng: random.Random, env) -> object:
    roll = rng.random()
    if roll < 0.4 and not env.unwrapped.episode_over:  # some experts have no move after the end
        return env.unwrapped.expert_action()
    if roll < 0.7:
        try:
            return env.unwrapped.random_action(rng)
        except NotImplementedError:  # games without one: moves some game reads
            return rng.choice(MOVES)
    return rng.choice(HOSTILE)


def _snapshot(env) -> tuple:
    base = env.unwrapped
    return (base.turn, base.episode_over, base._ended_as, base.total_reward, list(base.transcript))


def _play(make_env, seed: int, *, use_astep: bool) -> list:
    env = make_env()
    rng = random.Random(seed)
    record = []
    for episode in range(3):
        messages, info = env.reset(seed=seed * 10 + episode if episode != 1 else None)
        record.append(("reset", messages, list(info.items()), _snapshot(env)))
        steps = rng.randint(1, 30)  # past the end too: refusals must match
        for _ in range(steps):
            action = _action(rng, env)
            result = asyncio.run(env.astep(action)) if use_astep else env.step(action)
            messages, reward, terminated, truncated, info = result
            # Items, not the dict: the order of the keys must match as well.
            record.append((messages, reward, type(reward), terminated, truncated, list(info.items())))
            record.append(_snapshot(env))
    return record


GAMES = [
    ("guess-number-v0", {}),
    ("guess-number-v0", {"difficulty": "easy", "ruled_out_penalty": 0.05}),
    ("wordle-v0", {}),
    ("maze-v0", {}),
    ("tic-tac-toe-v0", {}),
]


@pytest.mark.parametrize(("env_id", "kwargs"), GAMES)
@pytest.mark.parametrize(("max_turns", "penalty"), [(None, None), (3, 0.25), (1, 0.0), (7, 2)])
def test_make_plays_as_max_turns_over_action_format(env_id, kwargs, max_turns, penalty):
    spec = envs.spec(env_id)
    turns = spec.max_turns if max_turns is None else max_turns
    charge = spec.format_penalty if penalty is None else penalty

    def fused():
        return envs.make(env_id, max_turns=max_turns, format_penalty=penalty, **kwargs)

    def by_hand():
        base = envs.make(env_id, **kwargs).unwrapped
        return MaxTurns(ActionFormat(base, penalty=charge), turns)

    # guess-number is the fastest and has the most parsing paths; the others are slower per step.
    for seed in range(12 if env_id == "guess-number-v0" else 3):
        assert _play(fused, seed, use_astep=False) == _play(by_hand, seed, use_astep=False)
    for seed in range(2):
        assert _play(fused, seed, use_astep=True) == _play(by_hand, seed, use_astep=True)


@pytest.mark.parametrize(
    ("kwargs", "turns", "charge"),
    [({}, 20, 0.1), ({"difficulty": "medium"}, 20, 0.1), ({"difficulty": "easy", "max_turns": 4}, 4, 0.1)],
)
def test_a_remembered_make_call_plays_as_the_hand_built_stack(kwargs, turns, charge):
    # make's one shortcut: a call it has resolved before (with or without kwargs) only builds.
    def by_hand():
        base_kwargs = {k: v for k, v in kwargs.items() if k != "max_turns"}
        return MaxTurns(
            ActionFormat(envs.make("guess-number-v0", **base_kwargs).unwrapped, penalty=charge), turns
        )

    first = envs.make("guess-number-v0", **kwargs)  # resolves the call
    again = envs.make("guess-number-v0", **kwargs)
    assert again.unwrapped.turngym_spec is first.unwrapped.turngym_spec
    for seed in range(20):
        assert _play(lambda: envs.make("guess-number-v0", **kwargs), seed, use_astep=False) == _play(
            by_hand, seed, use_astep=False
        )


def test_episode_limits_without_a_turn_limit_is_action_format():
    def fused():
        return EpisodeLimits(envs.make("guess-number-v0").unwrapped, max_turns=None, penalty=0.3)

    def by_hand():
        return ActionFormat(envs.make("guess-number-v0").unwrapped, penalty=0.3)

    for seed in range(20):
        assert _play(fused, seed, use_astep=False) == _play(by_hand, seed, use_astep=False)


def test_made_env_composes_with_hand_wrappers_and_unwrapped_is_the_bare_game():
    env = envs.make("guess-number-v0", max_turns=2)
    assert type(env.unwrapped).__name__ == "GuessNumberEnv"
    shaped = RewardShaping(env, scale=2.0, turn_cost=0.5)
    assert shaped.unwrapped is env.unwrapped
    shaped.reset(seed=0)
    _, reward, _, _, info = shaped.step("nonsense")
    assert reward == 2.0 * -0.1 - 0.5 and info["raw_reward"] == -0.1 and info["format_penalty"] == 0.1
    _, _, _, truncated, info = shaped.step("1")
    assert truncated and info["truncated_reason"] == "max_turns"
    # The bare game charges nothing: stepping it directly is stepping no wrapper.
    game = envs.make("guess-number-v0").unwrapped
    game.reset(seed=0)
    assert game.step("nonsense")[1] == 0.0


def test_episode_limits_checks_its_arguments_as_the_two_wrappers_do():
    base = envs.make("guess-number-v0").unwrapped
    with pytest.raises(ValueError, match="penalty must be >= 0"):
        EpisodeLimits(base, max_turns=0, penalty=-1)
    with pytest.raises(ValueError, match="max_turns must be >= 1"):
        EpisodeLimits(base, max_turns=0)
    with pytest.raises(ValueError, match="max_turns=0 is out of range"):
        envs.make("guess-number-v0", max_turns=0)


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"difficulty": "easy", "ruled_out_penalty": 0.05, "reveal_range": True}, {"difficulty": "hard"}],
)
def test_step_shortcuts_play_as_the_general_path(kwargs):
    # `astep` reads every reply with read_action, `_respond`, `parse_action`, `play` and `_finish`; `step`
    # takes TextEnv's inline plain-reply path and guess-number's digits shortcut.
    def bare():
        return envs.make("guess-number-v0", **kwargs).unwrapped

    for seed in range(15):
        assert _play(bare, seed, use_astep=False) == _play(bare, seed, use_astep=True)


def test_a_guess_number_subclass_reading_its_own_way_sees_every_reply():
    from envs.games.guess_number import GuessNumberEnv

    class Doubled(GuessNumberEnv):
        def parse_action(self, text):
            return 2 * super().parse_action(text) if text.strip().isdigit() else super().parse_action(text)

    env = Doubled()
    env.reset(seed=0)
    env.step("20")
    assert env.guesses == [40]


def test_episode_limits_on_a_plain_gymnasium_env_plays_as_the_two_wrappers():
    # An env that is no TextEnv: its info has no format_error, and it refuses after its end by itself.
    import gymnasium

    class Countdown(gymnasium.Env):
        def reset(self, *, seed=None, options=None):
            self.left = 3
            return [{"role": "user", "content": "go"}], {}

        def step(self, action):
            if self.left == 0:
                return [], 0.0, True, False, {"episode_ended": True}
            self.left -= 1
            info = {} if action == "ok" else {"format_error": "not ok"}
            return [{"role": "user", "content": str(self.left)}], 1.0, self.left == 0, False, info

    def play(env, actions, ahead):
        env.reset()
        for _ in range(ahead):  # steps past the wrappers: the env may refuse before they saw its end
            env.unwrapped.step("ok")
        return [(r[0], r[1], r[2], r[3], list(r[4].items())) for r in map(env.step, actions)]

    for turns in (None, 1, 2, 3, 5):
        for actions in (["ok"] * 6, ["ok", "bad", "ok", "ok", "bad"], ["bad"] * 5):
            by_hand = ActionFormat(Countdown(), penalty=0.5)
            if turns is not None:
                by_hand = MaxTurns(by_hand, turns)
            fused = EpisodeLimits(Countdown(), max_turns=turns, penalty=0.5)
            for ahead in (0, 2, 3):
                assert play(fused, actions, ahead) == play(by_hand, actions, ahead), (turns, actions, ahead)
