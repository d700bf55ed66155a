"""Registry: ids, errors naming near misses, Gymnasium mirroring, listing."""

import gymnasium
import pytest

import envs


def test_unknown_id_names_closest_ids():
    with pytest.raises(envs.UnknownEnvError) as e:
        envs.make("guess-numbr-v0")
    assert "guess-number-v0" in str(e.value)


def test_unknown_id_without_near_miss_says_how_to_list():
    with pytest.raises(envs.UnknownEnvError) as e:
        envs.make("zzzz-v9")
    assert "python -m envs list" in str(e.value)


@pytest.mark.parametrize("bad_id", ["NoVersion", "bad id-v0", "x-v", "UPPER-v0"])
def test_register_rejects_malformed_ids(bad_id):
    with pytest.raises(ValueError, match="name-v0"):
        envs.register(bad_id, "envs.games.guess_number:GuessNumberEnv")


def test_register_rejects_entry_point_without_attr():
    with pytest.raises(ValueError, match="module:attr"):
        envs.register("broken-v0", "envs.games.guess_number")


def test_every_env_is_listed_with_category_and_description():
    specs = envs.list_envs()
    assert {"guess-number-v0"} <= {s.id for s in specs}
    for s in specs:
        assert s.category and s.description, s.id


def test_list_by_category_filters():
    assert all(s.category == "text-game" for s in envs.list_envs("text-game"))
    assert envs.list_envs("no-such-category") == []


def test_gymnasium_make_uses_the_namespace():
    env = gymnasium.make("turngym/guess-number-v0", difficulty="easy")
    messages, info = env.reset(seed=0)
    assert messages[-1]["role"] == "user" and info["difficulty"] == "easy"


def test_make_passes_kwargs_and_rejects_unknown_difficulty():
    assert envs.make("guess-number-v0", difficulty="hard").unwrapped.difficulty == "hard"
    with pytest.raises(ValueError, match="easy"):
        envs.make("guess-number-v0", difficulty="impossible")


def test_user_registered_env_is_made_and_mirrored():
    from envs.games.guess_number import GuessNumberEnv

    envs.register("my-guess-v0", GuessNumberEnv, category="test", description="a copy", difficulty="easy")
    assert envs.make("my-guess-v0").unwrapped.difficulty == "easy"
    assert gymnasium.make("turngym/my-guess-v0").unwrapped.difficulty == "easy"


def test_register_again_warns_once_and_replaces():
    import warnings

    envs.register("overwrite-probe-v0", "envs.games.guess_number:GuessNumberEnv", difficulty="easy")
    with pytest.warns(UserWarning, match="Overriding env 'overwrite-probe-v0'") as caught:
        envs.register("overwrite-probe-v0", "envs.games.guess_number:GuessNumberEnv", difficulty="hard")
    assert len(caught) == 1  # not a second one from Gymnasium's mirror
    assert envs.spec("overwrite-probe-v0").kwargs == {"difficulty": "hard"}
    assert gymnasium.make("turngym/overwrite-probe-v0").unwrapped.difficulty == "hard"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the same spec again (a module reloaded) changes nothing: silent
        envs.register("overwrite-probe-v0", "envs.games.guess_number:GuessNumberEnv", difficulty="hard")


def test_interaction_register_again_warns():
    import warnings

    import interactions
    from interactions.registry import register

    register("overwrite-probe", "interactions.scripted_user:ScriptedUser")
    with pytest.warns(UserWarning, match="Overriding interaction 'overwrite-probe'"):
        register("overwrite-probe", "interactions.answer_feedback:AnswerFeedback")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        register("overwrite-probe", "interactions.answer_feedback:AnswerFeedback")
    assert interactions.spec("overwrite-probe").entry_point.endswith("AnswerFeedback")


def test_made_env_records_the_spec_it_was_made_from():
    env = envs.make("guess-number-v0", difficulty="easy", max_turns=3, tool_call_format="llama3")
    made_from = env.unwrapped.turngym_spec
    assert made_from.id == "guess-number-v0" and made_from.max_turns == 3
    assert made_from.kwargs == {"difficulty": "easy", "tool_call_format": "llama3"}
    assert envs.spec("guess-number-v0").max_turns == 20  # the registered spec is untouched
    plain = envs.make("guess-number-v0")
    assert plain.unwrapped.turngym_spec is envs.spec("guess-number-v0")


def test_gymnasiums_spec_of_a_made_env_makes_it_the_same_way():
    """One spec per env: Gymnasium's `env.spec` is derived from turngym's, so the two agree."""
    import gymnasium

    env = envs.make("guess-number-v0", difficulty="hard", max_turns=3)
    copy = gymnasium.make(env.unwrapped.spec)
    assert copy.unwrapped.turngym_spec == env.unwrapped.turngym_spec
    assert copy.reset(seed=0)[0] == env.reset(seed=0)[0] != envs.make("guess-number-v0").reset(seed=0)[0]
    plain = envs.make("guess-number-v0")
    assert plain.unwrapped.spec is gymnasium.spec("turngym/guess-number-v0")
