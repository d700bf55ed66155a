"""answer-feedback and scripted-user on their own, without an env."""

import numpy as np
import pytest

import interactions
from interactions.answer_feedback import parse_number


def _say(text):
    return [{"role": "assistant", "content": text}]


@pytest.mark.parametrize(
    "text, value",
    [("42", 42), ("1,234.5", 1234.5), ("$12", 12), ("-3", -3), ("3/4", 0.75), ("75%", 0.75), ("abc", None)],
)
def test_parse_number(text, value):
    assert parse_number(text) == value


def test_feedback_hints_decay_and_stops_when_right():
    fb = interactions.make("answer-feedback", max_attempts=3, decay=0.5)
    opening = fb.start(
        {"question": "What is 6 × 7?", "answer": 42, "hints": ["Six sevens.", "It is 40 + 2."]}
    )
    assert "6 × 7" in opening[0]["content"] and "3 attempts" in opening[0]["content"]
    reply = fb.respond(_say("I think about it."))
    assert reply.metrics["format_error"] and fb.attempts == 0 and not reply.done
    reply, reward, done, metrics = fb.respond(_say("Answer: 40"))
    assert "Six sevens" in reply and "too low" in reply and not done and metrics["attempts"] == 1
    reply, reward, done, _ = fb.respond(_say("Answer: 50"))
    assert "40 + 2" in reply and "too high" in reply
    reply, reward, done, metrics = fb.respond(_say("so \\boxed{42}"))
    assert done and reward == 0.25 and metrics["success"]
    assert fb.finish() == (0.0, {"success": True, "attempts": 3})


def test_feedback_out_of_tries_reveals_answer():
    fb = interactions.make("answer-feedback", max_attempts=1)
    fb.start({"question": "Capital of Italy?", "answer": "Rome"})
    reply, reward, done, metrics = fb.respond(_say("Answer: Milan"))
    assert done and reward == 0.0 and "Rome" in reply and metrics["success"] is False
    assert fb.respond(_say("Answer: Rome")).done  # closed questions stay closed
    assert fb.finish().metrics["success"] is False


def test_feedback_text_answers_and_last_number_mode():
    fb = interactions.make("answer-feedback", answer_format="last_number")
    fb.start({"question": "2+2?", "answer": 4})
    assert fb.respond(_say("it is 3 or maybe 4")).done


def test_scripted_user_reveals_by_keyword_and_scores_order():
    goal = {
        "budget": {
            "value": 100,
            "keywords": ["budget", "price"],
            "reveal": "At most ${value}.",
            "check": "max",
            "field": "price",
        },
        "color": {"value": "red", "keywords": ["colour", "color"], "reveal": "In {value}."},
        "size": {"value": "M", "known": True},
    }
    u = interactions.make("scripted-user", goal=goal, opening="Hi, I need a shirt.")
    assert u.start({"rng": np.random.default_rng(0)}) == [{"role": "user", "content": "Hi, I need a shirt."}]
    reply, _, done, metrics = u.respond(_say("What's your budget and favourite colour?"))
    assert reply == "At most $100. In red." and metrics["revealed"] == 2 and not done
    assert "not sure" in u.respond(_say("Nice weather.")).content
    assert u.elicited == 1.0
    good = u.finish({"item": {"price": 90, "color": "Red", "size": "M"}})
    assert good.reward == pytest.approx(1.0) and good.metrics["success"]
    u.start({})
    bad = u.finish({"item": {"price": 120, "color": "red", "size": "M"}})
    # size was known from the start (1/3 elicited); 2 of 3 preferences met.
    assert bad.reward == pytest.approx(0.2 / 3 + 0.8 * 0.5 * 2 / 3) and not bad.metrics["success"]
    assert u.finish(None).metrics["completed"] is False


def test_scripted_user_patience_and_goal_per_episode():
    u = interactions.make("scripted-user", patience=2)
    u.start({"goal": {"size": {"value": 9, "keywords": ["size"], "ask": "What size?"}}})
    assert u.expert_reply([]) == "What size?"
    assert not u.respond(_say("hello")).done
    assert u.respond(_say("hello")).done


def test_bad_slot_config_is_reported():
    u = interactions.make("scripted-user", goal={"x": {"value": 1, "check": "almost"}})
    with pytest.raises(ValueError, match="slot 'x': check must be one of"):
        u.start({})
