"""calculator-qa-v0 and search-qa-v0: registry tools needed, answer graded, optional tool-call shaping."""

import json

import pytest
from gymnasium.utils.env_checker import check_env

import envs
from envs.tool_use.search_qa import bundled_questions

IDS = ["calculator-qa-v0", "search-qa-v0"]


def call(name, **arguments):
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


def expert_episode(env, seed, options=None):
    messages, _ = env.reset(seed=seed, options=options)
    steps, total, info = [messages], 0.0, {}
    for _ in range(8):
        messages, reward, terminated, truncated, info = env.step(env.expert_action())
        steps.append(messages)
        total += reward
        if terminated or truncated:
            break
    return steps, total, info


@pytest.mark.parametrize("env_id", IDS)
def test_check_env_and_registry_tools(env_id):
    env = envs.make(env_id)
    check_env(env.unwrapped)
    check_env(env)
    names = [s["function"]["name"] for s in env.unwrapped.tool_schemas]
    assert "submit" in names and ("calculator" in names or "search" in names)


@pytest.mark.parametrize("env_id", IDS)
def test_expert_uses_tools_and_is_right_and_deterministic(env_id):
    for d in envs.make(env_id).unwrapped.difficulties:
        env = envs.make(env_id, difficulty=d)
        for seed in range(5):
            steps, total, info = expert_episode(env, seed)
            assert info["success"] and total == 1.0, (d, seed, steps)
            assert any(m[0]["role"] == "tool" and m[0]["name"] != "submit" for m in steps[1:])
            assert steps == expert_episode(env, seed)[0]


def test_every_search_question_is_answerable_from_its_searches():
    env = envs.make("search-qa-v0")
    for q in bundled_questions():
        steps, total, info = expert_episode(env, 0, {"question_id": q["id"]})
        assert info["success"], q
        found = " ".join(m[0]["content"] for m in steps[1:] if m[0].get("name") in ("search", "calculator"))
        if "expression" in q:
            assert q["answer"] in found.replace(",", ""), q  # the calculator produced it
        else:
            said = found.lower().replace(",", "")
            assert any(a.lower() in said for a in [q["answer"], *q.get("aliases", [])]), q


@pytest.mark.parametrize("env_id", IDS)
def test_wrong_answer_scores_zero_and_text_answers_count(env_id):
    env = envs.make(env_id)
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step(call("submit", answer="-123456789.5"))
    assert terminated and reward == 0.0 and info["success"] is False
    env.reset(seed=0)
    answer = env.unwrapped.question.answer
    _, reward, terminated, _, info = env.step(f"I worked it out.\nAnswer: {answer}")
    assert terminated and reward == 1.0


def test_numbers_in_other_formats_are_accepted():
    env = envs.make("calculator-qa-v0")
    env.reset(seed=0, options={"expression": "1234 * 5678"})
    assert env.step(call("submit", answer="7,006,652"))[1] == 1.0
    env.reset(seed=0, options={"expression": "7 / 4"})
    assert env.step(call("submit", answer="7/4"))[1] == 1.0
    env.reset(seed=0, options={"expression": "7 / 4"})
    assert env.step(call("submit", answer="1.75"))[1] == 1.0


def test_useful_call_reward_is_capped():
    env = envs.make("calculator-qa-v0", useful_call_reward=0.05, max_rewarded_calls=2)
    env.reset(seed=0)
    # Different calls are rewarded up to the cap (a repeated call earns nothing: test_tool_use_hacking).
    rewards = [env.step(call("calculator", expression=f"{n} + {n}"))[1] for n in (2, 3, 4)]
    assert rewards == [0.05, 0.05, 0.0]
    assert env.step(call("calculator", expression="1 / 0"))[1] == 0.0  # failed calls earn nothing
    assert (
        envs.make("calculator-qa-v0").reset(seed=0)
        and envs.make("calculator-qa-v0").unwrapped.useful_call_reward == 0.0
    )


@pytest.mark.parametrize("env_id", IDS)
def test_bad_actions_never_raise(env_id):
    env = envs.make(env_id, max_turns=100)
    env.reset(seed=0)
    for action in [
        "",
        "no answer here",
        None,
        7,
        call("submit"),
        call("calculator", expression="2 +"),
        call("search", query=""),
        call("nope"),
    ]:
        messages, reward, terminated, truncated, _ = env.step(action)
        assert messages and not terminated and not truncated
    assert expert_episode(env, 0)[2]["success"]


def test_unknown_difficulty_is_an_error():
    with pytest.raises(ValueError, match="unknown difficulty"):
        envs.make("search-qa-v0", difficulty="medium")
