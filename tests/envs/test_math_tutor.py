"""math-tutor-v0: generated problems, graded hints, reward decaying per attempt."""

import re
from fractions import Fraction

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import envs
from envs.conversations.math_problems import GENERATORS, generate

BAD_ACTIONS = [
    "",
    "   ",
    "x" * 40000,
    "\x00\x1b[31m",
    None,
    42,
    ["x"],
    {"role": "user", "content": "hi"},
    "<tool_call>\n{oops}\n</tool_call>",
    "I think it's around 12 but not sure",
]


def play(env, seed, policy, max_steps=20):
    messages, info = env.reset(seed=seed)
    steps, total = [messages], 0.0
    for _ in range(max_steps):
        messages, reward, terminated, truncated, info = env.step(policy(env))
        steps.append(messages)
        total += reward
        if terminated or truncated:
            break
    return steps, total, info


def test_check_env():
    env = envs.make("math-tutor-v0")
    check_env(env.unwrapped)
    check_env(env)


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_same_seed_same_problem_and_expert_solves_first_try(difficulty):
    env = envs.make("math-tutor-v0", difficulty=difficulty)
    a = play(env, 5, lambda e: e.expert_action())
    assert a == play(env, 5, lambda e: e.expert_action())
    assert (
        a[0][0] != play(env, 6, lambda e: e.expert_action())[0][0]
        or a[0][0] != play(env, 7, lambda e: e.expert_action())[0][0]
    )
    assert a[1] == 1.0 and a[2]["success"] is True and a[2]["attempts"] == 1


def test_reward_decays_per_attempt_and_hints_get_specific():
    env = envs.make("math-tutor-v0", difficulty="medium", max_attempts=3, decay=0.5)
    env.reset(seed=1)
    first = env.step("Answer: -1")[0][0]["content"]
    second = env.step("Answer: -2")[0][0]["content"]
    assert "Hint" in first and "Hint" in second and first != second
    _, reward, terminated, _, info = env.step(env.expert_action())
    assert terminated and reward == 0.25 and info["attempts"] == 3


def test_out_of_attempts_ends_without_reward():
    env = envs.make("math-tutor-v0", max_attempts=2)
    env.reset(seed=2)
    env.step("Answer: -1")
    messages, reward, terminated, _, info = env.step("Answer: -1")
    assert (
        terminated and reward == 0.0 and info["success"] is False and "answer was" in messages[0]["content"]
    )


def test_hidden_answer_not_in_info_or_opening():
    env = envs.make("math-tutor-v0", difficulty="easy")
    messages, info = env.reset(seed=3)
    assert set(info) >= {"question", "difficulty"} and not {"answer", "hints", "solution"} & set(info)


def test_bad_actions_never_raise_nor_cost_attempts():
    env = envs.make("math-tutor-v0", max_turns=100)
    env.reset(seed=0)
    for action in BAD_ACTIONS:
        messages, reward, terminated, truncated, info = env.step(action)
        assert messages and not terminated and not truncated and reward < 0 and info["format_error"]
    _, reward, terminated, _, info = env.step(env.expert_action())
    assert terminated and info["success"] and info["attempts"] == 1


def test_difficulty_per_episode_and_posed_problem():
    env = envs.make("math-tutor-v0")
    _, info = env.reset(seed=0, options={"difficulty": "hard"})
    assert info["difficulty"] == "hard"
    messages, _ = env.reset(seed=0, options={"question": "What is 2 + 3?", "answer": 5})
    assert messages[-1]["content"].startswith("What is 2 + 3?")
    assert env.step("Answer: 5")[1] == 1.0
    with pytest.raises(ValueError, match="unknown difficulty"):
        envs.make("math-tutor-v0", difficulty="impossible")


@pytest.mark.parametrize("difficulty", list(GENERATORS))
def test_generated_answers_are_right(difficulty):
    rng = np.random.default_rng(0)
    for _ in range(200):
        p = generate(rng, difficulty)
        if p.kind in ("add", "subtract", "multiply", "precedence"):
            expr = re.search(r"(?:is|Compute) (.+?)[?.]$", p.question).group(1).replace("×", "*")
            assert eval(expr) == p.answer, p  # noqa: S307 - our own generated arithmetic
        elif p.kind == "fractions":
            a, b, c, d = map(int, re.findall(r"\d+", p.question)[:4])
            assert Fraction(a, b) + Fraction(c, d) == Fraction(p.answer)
        assert p.hints and str(p.answer) in p.solution
