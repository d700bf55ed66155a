"""guess-number-v0: reading a guess (never from prose), behaviour counts, and its training options."""

import pytest

import envs


def _secret(env) -> int:
    return env.unwrapped.secret


def test_reveal_range_states_what_the_feedback_narrowed_to():
    env = envs.make("guess-number-v0", difficulty="easy", action_tool=False, reveal_range=True)
    seed = next(s for s in range(40) if env.reset(seed=s) and 3 <= _secret(env) <= 18)
    messages, *_ = env.step("1")
    assert "Guess a higher number. It is between 2 and 20. 6 guesses left." in messages[0]["content"]
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


@pytest.mark.parametrize(
    "reply",
    [
        "Exactly {s} guesses left.",  # the count a policy echoed, read as a guess before
        "I guess {s}",
        "The number is {s}",
        "Yes, the correct answer is {s}",
    ],
)
def test_a_number_inside_a_sentence_is_not_a_guess(reply):
    env = envs.make("guess-number-v0", difficulty="easy", action_tool=False)
    env.reset(seed=0)
    game = env.unwrapped
    _, reward, terminated, _, info = env.step(reply.format(s=game.secret))
    assert not terminated and game.guesses == [] and "start the reply with your guess" in info["format_error"]


@pytest.mark.parametrize(
    "reply", ["{s}", "{s}.", "**{s}**", "Guess: {s}", "My answer is {s}", "{s} is my guess"]
)
def test_a_reply_that_starts_with_the_number_is_a_guess(reply):
    env = envs.make("guess-number-v0", difficulty="easy", action_tool=False)
    env.reset(seed=0)
    _, _, terminated, _, info = env.step(reply.format(s=env.unwrapped.secret))
    assert terminated and info["success"]
    assert info["behaviour"]["with_text"] == any(c.isalpha() for c in reply.replace("{s}", ""))


def test_behaviour_counts_follow_range_and_repeats():
    env = envs.make("guess-number-v0", difficulty="easy", action_tool=False)
    next(s for s in range(60) if env.reset(seed=s) and 8 <= _secret(env) <= 12)
    info = {}
    # 3 too low; 2 goes against it (and below 4); 3 again (a repeat, ruled out); 19 and 15 too high.
    for guess in ("3", "2", "3", "19", "15"):
        *_, info = env.step(guess)
    assert info["behaviour"] == {
        "guesses": 5,
        "after_feedback": 4,
        "followed": 3,  # 3 after "2 is too low", 19 after "3 is too low", 15 after "19 is too high"
        "in_range": 3,  # 3 (first), 19 (in 4..20), 15 (in 4..18); not 2, not the repeated 3
        "repeats": 1,
        "with_text": 0,
    }


def test_the_prompt_names_one_way_to_answer():
    with_tool = envs.make("guess-number-v0", difficulty="easy")
    text_only = envs.make("guess-number-v0", difficulty="easy", action_tool=False)
    opening = " ".join(m["content"] for m in with_tool.reset(seed=0)[0])
    assert "guess tool" in opening and "number only" not in opening
    assert "guess tool" in with_tool.step("hello")[0][0]["content"]
    opening = " ".join(m["content"] for m in text_only.reset(seed=0)[0])
    assert "number only" in opening and "tool" not in opening
    # Both readings stay accepted whichever way the prompt asks.
    with_tool.reset(seed=0)
    assert with_tool.step(str(with_tool.unwrapped.secret))[4]["success"]


def _play(env, guesses):
    rewards = []
    for guess in guesses:
        _, reward, terminated, *_ = env.step(str(guess))
        rewards.append(reward)
        if terminated:
            break
    return rewards


def test_progress_reward_sums_to_itself_on_every_win_and_ranks_losses_by_how_far_they_got():
    plain = envs.make("guess-number-v0", difficulty="easy", action_tool=False)
    shaped = envs.make("guess-number-v0", difficulty="easy", action_tool=False, progress_reward=0.5)
    seed = next(s for s in range(100) if shaped.reset(seed=s) and _secret(shaped) == 19)
    # Two winning paths: the shaping adds exactly 0.5 to each, so it changes no ranking among wins.
    for path in ([10, 15, 18, 19], [11, 12, 19]):
        plain.reset(seed=seed)
        shaped.reset(seed=seed)
        assert sum(_play(shaped, path)) == pytest.approx(sum(_play(plain, path)) + 0.5)
    # Two losing paths of three guesses: halving the range earns more than stepping by one.
    shaped.reset(seed=seed)
    jumps = sum(_play(shaped, [10, 15, 17]))
    shaped.reset(seed=seed)
    walk = sum(_play(shaped, [11, 12, 13]))
    assert 0 < walk < jumps < 0.5
    # A guess the feedback had ruled out narrows nothing and earns nothing.
    shaped.reset(seed=seed)
    assert _play(shaped, [10, 5])[1] == 0.0


def test_progress_reward_is_off_by_default_and_bounded():
    env = envs.make("guess-number-v0", difficulty="easy", action_tool=False)
    env.reset(seed=0)
    guess = 1 if _secret(env) != 1 else 20
    assert env.step(str(guess))[1] == 0.0
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(ValueError, match="progress_reward"):
            envs.make("guess-number-v0", progress_reward=bad)
