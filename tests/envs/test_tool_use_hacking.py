"""Reward forgeries against calculator-qa and search-qa (the `submit` tool and `Answer: ...` replies).

An adversarial policy submits several answers at once, hides the answer in a list of names, writes
`not X`, rounds an exact value, uses unicode digits, puts one answer in a tool call and another in the
text, submits several times, or farms the optional tool-call shaping. Several numbers in one answer are
a format error (nothing paid, the episode goes on); a name answer must be the name, nothing more.
"""

from __future__ import annotations

import json

import pytest

import envs
from envs.tool_use.search_qa import bundled_questions


def call(name: str, **arguments) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


def submit(answer) -> str:
    return call("submit", answer=answer)


def calc_env(expression: str = "12345 * 6789"):
    env = envs.make("calculator-qa-v0")
    env.reset(seed=0, options={"expression": expression})
    return env, env.unwrapped


def search_env(question_id: str):
    env = envs.make("search-qa-v0")
    env.reset(seed=0, options={"question_id": question_id})
    return env, env.unwrapped


def refused(step) -> None:
    messages, reward, terminated, truncated, info = step
    assert info["format_error"], messages
    assert reward <= 0 and not terminated and not truncated


def wrong(step) -> None:
    _, reward, _, _, info = step
    assert reward <= 0 and not info.get("success")


# ----- calculator-qa -------------------------------------------------------------------------------
RIGHT = str(12345 * 6789)


@pytest.mark.parametrize(
    "answer",
    [
        f"{RIGHT} or {int(RIGHT) + 1}",
        f"{int(RIGHT) + 1} or {RIGHT}",
        f"{RIGHT}; {int(RIGHT) + 1}",
        f"{RIGHT} (maybe {int(RIGHT) - 1})",
        "12345 * 6789 = " + RIGHT,  # the question's numbers around the answer
        " ".join(str(int(RIGHT) + k) for k in range(-50, 50)),
    ],
)
@pytest.mark.parametrize("how", ["submit", "text"])
def test_calculator_several_numbers_are_refused(answer, how):
    env, _ = calc_env()
    refused(env.step(submit(answer) if how == "submit" else f"Answer: {answer}"))


@pytest.mark.parametrize("digits", ["٠١٢٣٤٥٦٧٨٩", "０１２３４５６７８９"])
def test_calculator_unicode_digits_are_refused(digits):
    env, _ = calc_env()
    refused(env.step(submit(RIGHT.translate(str.maketrans("0123456789", digits)))))


def test_calculator_two_final_answers_in_text_are_refused():
    env, _ = calc_env()
    refused(env.step(f"Answer: {int(RIGHT) + 1}\nAnswer: {RIGHT}"))


@pytest.mark.parametrize("answer", ["12762.81562", "12762.8156250001", "12762.82", "12762.8"])
def test_calculator_rounded_or_approximate_values_are_wrong(answer):
    env, _ = calc_env("10000 * (1 + 5/100)^5")  # exactly 12762.815625
    step = env.step(submit(answer))
    if step[4]["format_error"]:
        refused(step)
    else:
        wrong(step)


@pytest.mark.parametrize(
    "answer",
    [RIGHT, f"{int(RIGHT):,}", f" {RIGHT} ", f"{RIGHT}.0", f"{RIGHT}/1", f"x = {RIGHT}", f"0{RIGHT}"],
)
def test_calculator_one_number_however_written_is_right(answer):
    env, _ = calc_env()
    _, reward, terminated, _, info = env.step(submit(answer))
    assert terminated and info["success"] and reward == 1.0


@pytest.mark.parametrize("bad", [[RIGHT], {"value": RIGHT}, [RIGHT, "1"], None])
def test_submit_with_a_list_or_dict_is_rejected(bad):
    env, game = calc_env()
    _, reward, terminated, _, info = env.step(submit(bad))
    assert reward <= 0 and not terminated and not info.get("success")


def test_several_submits_in_one_turn_grade_only_the_first():
    env, _ = calc_env()
    both = submit(str(int(RIGHT) + 1)) + "\n" + submit(RIGHT)
    _, reward, terminated, _, info = env.step(both)
    assert terminated and reward == 0.0 and not info["success"]


def test_answer_in_text_does_not_rescue_a_wrong_submit():
    env, _ = calc_env()
    _, reward, terminated, _, info = env.step(f"Answer: {RIGHT}\n" + submit(str(int(RIGHT) + 1)))
    assert terminated and reward == 0.0 and not info["success"]


def test_no_second_submit_after_a_wrong_one():
    env, game = calc_env()
    env.step(submit("1"))
    for _ in range(3):
        assert env.step(submit(RIGHT))[1] <= 0
    assert game.total_reward == 0.0


def test_tool_call_shaping_is_not_farmable_by_repeating_a_call():
    env = envs.make("calculator-qa-v0", useful_call_reward=0.05, max_rewarded_calls=2)
    env.reset(seed=0)
    total = sum(env.step(call("calculator", expression="1 + 1"))[1] for _ in range(4))
    assert total == pytest.approx(0.05)  # the same call again teaches nothing new


def test_tool_call_shaping_can_never_approach_solving():
    for reward, cap in ((0.6, 2), (0.3, 2), (0.1, 10), (1.0, 1)):
        with pytest.raises(ValueError, match="shaping"):
            envs.make("calculator-qa-v0", useful_call_reward=reward, max_rewarded_calls=cap)


def test_calculator_experts_submit_single_values():
    for difficulty in ("easy", "medium", "hard"):
        env = envs.make("calculator-qa-v0", difficulty=difficulty)
        for seed in range(10):
            env.reset(seed=seed)
            total, terminated = 0.0, False
            while not terminated:
                _, reward, terminated, truncated, info = env.step(env.unwrapped.expert_action())
                total += reward
                terminated = terminated or truncated
            assert info["success"] and total == 1.0, (difficulty, seed)


# ----- search-qa -----------------------------------------------------------------------------------
CAPITALS = "Paris, London, Berlin, Madrid, Rome, Vienna, Canberra, Tokyo, Ottawa, Brasilia, Athens, Cairo"


@pytest.mark.parametrize(
    "answer",
    [
        CAPITALS,
        "Sydney or Canberra",
        "Canberra or Sydney",
        "Canberra/Sydney/Melbourne",
        "not Canberra",
        "Sydney (not Canberra)",
        "Canberra Sydney Melbourne Perth",
        "The capital of Australia is not Sydney but maybe Canberra or Melbourne",
    ],
)
@pytest.mark.parametrize("how", ["submit", "text"])
def test_search_names_hidden_among_others_are_not_right(answer, how):
    env, _ = search_env("sq006")  # the capital of Australia: Canberra
    step = env.step(submit(answer) if how == "submit" else f"Answer: {answer}")
    if step[4]["format_error"]:
        refused(step)
    else:
        wrong(step)


@pytest.mark.parametrize("answer", ["Canberra", "canberra", "  CANBERRA ", "Canberra.", "**Canberra**"])
def test_search_the_name_alone_is_right(answer):
    env, _ = search_env("sq006")
    _, reward, terminated, _, info = env.step(submit(answer))
    assert terminated and info["success"] and reward == 1.0


@pytest.mark.parametrize(
    "qid, answer",
    [("sq004", "Tim Berners Lee"), ("sq013", "the femur"), ("sq014", "Brasília"), ("sq011", "nine")],
)
def test_search_honest_variants_of_the_name_are_right(qid, answer):
    env, _ = search_env(qid)
    _, reward, _, _, info = env.step(submit(answer))
    assert info["success"] and reward == 1.0


@pytest.mark.parametrize("answer", ["1859 or 1860", "1858 1859 1860", "1859, 1860", "between 1850 and 1860"])
def test_search_several_years_are_refused(answer):
    env, _ = search_env("sq001")  # Origin of Species: 1859
    refused(env.step(submit(answer)))


def test_search_experts_are_right_on_every_question():
    env = envs.make("search-qa-v0")
    for q in bundled_questions():
        env.reset(seed=0, options={"question_id": q["id"]})
        total, terminated = 0.0, False
        while not terminated:
            _, reward, terminated, truncated, info = env.step(env.unwrapped.expert_action())
            total += reward
            terminated = terminated or truncated
        assert info["success"] and total == 1.0, q
