"""Namespaced ids (`namespace/Name-vN[-variant]`): accepted by `register`, mirrored into Gymnasium as themselves."""

import gymnasium
import pytest

import envs


@pytest.mark.parametrize("good_id", ["probe-ns/Guess-v0", "probe-ns/My.Game_2-v3", "probe-ns/2048-v0-3x3"])
def test_namespaced_ids_register_and_mirror_as_themselves(good_id):
    envs.register(
        good_id,
        "envs.games.guess_number:GuessNumberEnv",
        category="test",
        description="a probe",
        difficulty="easy",
    )
    env = envs.make(good_id)
    assert env.unwrapped.difficulty == "easy" and env.unwrapped.spec.id == good_id
    assert gymnasium.make(good_id).unwrapped.turngym_spec.id == good_id
    assert envs.spec(good_id).gym_id == good_id


def test_a_namespaced_env_made_with_kwargs_is_remade_the_same_way_by_gymnasium():
    env = envs.make("textarena/2048-v0-3x3", max_turns=7)
    copy = gymnasium.make(env.unwrapped.spec)
    assert copy.unwrapped.turngym_spec == env.unwrapped.turngym_spec
    assert copy.reset(seed=1)[0] == env.reset(seed=1)[0]


@pytest.mark.parametrize(
    "bad_id",
    [
        "a/b/c-v0",  # one namespace at most, as in Gymnasium
        "Upper/Game-v0",  # the namespace is lowercase
        "probe-ns/Game",  # no version
        "probe-ns/-v0",  # no name
        "probe-ns/Game-v0-",  # an empty variant
        "probe-ns/Two words-v0",
        "/Game-v0",
        "probe-ns/Game-v0/x",
    ],
)
def test_malformed_namespaced_ids_are_refused(bad_id):
    with pytest.raises(ValueError, match="namespace/Name-v0"):
        envs.register(bad_id, "envs.games.guess_number:GuessNumberEnv")


def test_the_turngym_namespace_is_reserved_for_mirrors_of_plain_ids():
    with pytest.raises(ValueError, match="reserved"):
        envs.register("turngym/guess-number-v0", "envs.games.guess_number:GuessNumberEnv")
    assert gymnasium.spec("turngym/guess-number-v0").kwargs == {"turngym_id": "guess-number-v0"}
