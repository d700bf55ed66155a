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


def _results(env, actions, seed=0):
    env.reset(seed=seed)
    return [(r[0], r[1], r[2], r[3], list(r[4].items())) for r in map(env.step, actions)]


def test_make_of_env_spec_rebuilds_the_whole_wrapper_stack():
    from envs.wrappers import EpisodeLimits, RewardShaping

    env = RewardShaping(
        envs.make("guess-number-v0", difficulty="easy", max_turns=4), scale=2.0, turn_cost=0.1
    )
    spec = env.spec
    assert [w.name for w in spec.additional_wrappers] == ["EpisodeLimits", "RewardShaping"]
    assert spec.additional_wrappers[1].kwargs == {"scale": 2.0, "turn_cost": 0.1, "fn": None}
    for again in (envs.make(spec), gymnasium.make(spec)):
        assert type(again) is RewardShaping and type(again.env) is EpisodeLimits
        assert again.spec == spec and again.env.max_turns == 4 and again.unwrapped.difficulty == "easy"
        actions = ["no idea", "10", "5", "15", "3"]
        assert _results(again, actions) == _results(env, actions)


def test_registered_additional_wrappers_are_applied_and_recorded():
    from envs.wrappers import RewardShaping

    envs.register(
        "shaped-probe-v0",
        "envs.games.guess_number:GuessNumberEnv",
        category="test",
        description="guess-number, rewards doubled",
        additional_wrappers=[RewardShaping.wrapper_spec(scale=3.0)],
    )
    for env in (envs.make("shaped-probe-v0"), envs.make("shaped-probe-v0", difficulty="hard")):
        assert type(env) is RewardShaping and env.scale == 3.0
        assert (
            env.unwrapped.turngym_spec.additional_wrappers == envs.spec("shaped-probe-v0").additional_wrappers
        )
        env.reset(seed=0)
        assert env.step("nonsense")[1] == 3.0 * -0.1
        assert type(envs.make(env.spec)) is RewardShaping and envs.make(env.spec).spec == env.spec
    # A turngym spec is built as it says, registered or not.
    built = envs.make(envs.spec("shaped-probe-v0"))
    assert type(built) is RewardShaping and built.unwrapped.turngym_spec is envs.spec("shaped-probe-v0")
    with pytest.raises(ValueError, match="WrapperSpecs"):
        envs.register("shaped-probe-v1", "envs.games.guess_number:GuessNumberEnv", additional_wrappers=["x"])


def test_make_of_a_spec_says_what_it_cannot_rebuild():
    from envs.wrappers import TextWrapper

    class Unrecorded(TextWrapper):  # records no constructor keywords
        pass

    spec = Unrecorded(envs.make("guess-number-v0")).spec
    assert spec.additional_wrappers[-1].kwargs is None
    with pytest.raises(ValueError, match="Unrecorded cannot be rebuilt"):
        envs.make(spec)
    with pytest.raises(ValueError, match="not a turngym env's spec"):
        envs.make(gymnasium.spec("CartPole-v1"))
    with pytest.raises(TypeError, match="env id, a turngym EnvSpec"):
        envs.make(42)


def test_the_make_shortcut_keeps_each_call_its_own():
    """A call resolved before only builds; a different call (value, its type, the spec) resolves again."""
    from envs.registry import registration

    seen = []

    def probe(**kwargs):
        seen.append(kwargs)
        return registration.spec("guess-number-v0").load()()

    envs.register("kw-probe-v0", probe, category="test", description="records its kwargs", flag=0)
    for value in (1, True, 1.0, 1, "1", None):
        envs.make("kw-probe-v0", flag=value)
    # 1, True and 1.0 are equal keys of a dict, but each call gets its own value.
    assert [(type(k["flag"]), k["flag"]) for k in seen] == [
        (int, 1),
        (bool, True),
        (float, 1.0),
        (int, 1),
        (str, "1"),
        (type(None), None),
    ]
    envs.make("kw-probe-v0", flag=[1])  # a list is no key: the full path, every time
    envs.make("kw-probe-v0", flag=[1])
    assert seen[-1] == {"flag": [1]} and seen[-1] is not seen[-2]
    # Registered again: the remembered calls of the old spec are not used.
    with pytest.warns(UserWarning, match="Overriding env 'kw-probe-v0'"):
        envs.register("kw-probe-v0", probe, category="test", description="records its kwargs", flag=5)
    env = envs.make("kw-probe-v0")
    assert seen[-1] == {"flag": 5} and env.unwrapped.turngym_spec is envs.spec("kw-probe-v0")
    # A bad argument fails every time, and is not remembered.
    for _ in range(2):
        with pytest.raises(ValueError, match="easy"):
            envs.make("guess-number-v0", difficulty="impossible")
    assert all("impossible" not in key for key in registration._MADE if isinstance(key, tuple))


def test_the_make_shortcut_is_bounded(monkeypatch):
    from envs.registry import registration

    monkeypatch.setattr(registration, "_MADE_LIMIT", 4)
    for seed in range(10):
        envs.make("guess-number-v0", ruled_out_penalty=seed / 100)
        assert len(registration._MADE) <= 4
