"""guess-number-v0's training options: the answer stating the narrowed range, and the ruled-out penalty."""

import pytest

import envs


def _secret(env) -> int:
    return env.unwrapped.secret


def test_reveal_range_states_what_the_feedback_narrowed_to():
    env = envs.make("guess-number-v0", difficulty="easy", action_tool=False, reveal_range=True)
    seed = next(s for s in range(40) if env.reset(seed=s) and 3 <= _secret(env) <= 18)
    messages, *_ = env.step("1")
    assert "The number is higher. It is between 2 and 20. 6 guesses left." in messages[0]["content"]
    messages, *_ = env.step("20")
    assert "It is between 2 and 19." in messages[0]["content"]
    plain = envs.make("guess-number-v0", difficulty="easy", action_tool=False)
    plain.reset(seed=seed)
    assert "between" not in plain.step("1")[0][0]["content"]


def test_ruled_out_guess_costs_the_penalty_on_its_own_turn():
    env = envs.make("guess-number-v0", difficulty="easy", ruled_out_penalty=0.1)
    next(s for s in range(40) if env.reset(seed=s) and 3 <= _secret(env) <= 18)
    secret = _secret(env)
    below = secret - 2
    _, reward, *_ = env.step(str(below))
    assert reward == 0.0  # inside 1..20: nothing ruled out yet
    _, reward, *_ = env.step(str(below))  # a repeat is ruled out
    assert reward == pytest.approx(-0.1)
    _, reward, *_ = env.step(str(below - 1))  # below a "higher" answer
    assert reward == pytest.approx(-0.1)
    _, reward, *_ = env.step(str(secret - 1))  # still possible
    assert reward == 0.0
    _, reward, terminated, *_ = env.step(str(secret))
    assert terminated and reward > 0.5


def test_ruled_out_penalty_is_not_charged_by_default_and_never_negative():
    env = envs.make("guess-number-v0", difficulty="easy")
    env.reset(seed=0)
    guess = 1 if _secret(env) != 1 else 2
    env.step(str(guess))
    assert env.step(str(guess))[1] == 0.0
    with pytest.raises(ValueError, match="ruled_out_penalty"):
        envs.make("guess-number-v0", ruled_out_penalty=-0.5)


def test_expert_never_pays_the_penalty():
    env = envs.make("guess-number-v0", difficulty="medium", reveal_range=True, ruled_out_penalty=0.1)
    for seed in range(20):
        env.reset(seed=seed)
        terminated = False
        while not terminated:
            _, reward, terminated, truncated, info = env.step(env.unwrapped.expert_action())
            assert reward >= 0.0
        assert info["success"]
