"""ModelParticipant: the one engine-backed other side (game opponents and simulated users both use it)."""

import pytest

from interactions.llm_user import LLMUser
from interactions.model_participant import ModelParticipant
from rollout.engine_opponent import EngineOpponent
from turngym.chat import user
from turngym.common.run_sync import run_sync
from turngym.engines.engine import EngineError, Generation


class Recording:
    """A real engine that keeps each request and writes a fixed text (or raises, or writes nothing)."""

    def __init__(self, tokenizer, text=" [4] ", error=None):
        self.tokenizer, self.text, self.error, self.requests = tokenizer, text, error, []

    async def generate(self, request_id, *, prompt_ids, sampling_params=None):
        self.requests.append((request_id, list(prompt_ids), dict(sampling_params or {})))
        if self.error is not None:
            raise self.error
        return Generation(token_ids=self.tokenizer.encode(self.text, add_special_tokens=False))


def test_the_docstring_example(tokenizer):
    engine = Recording(tokenizer)
    player = ModelParticipant(engine, tokenizer, name="opponent", seed=0)
    assert (run_sync(player.reply([user("Your move.")])).text, player.requests, player.failures) == (
        "[4]",
        1,
        0,
    )
    request_id, prompt_ids, params = engine.requests[0]
    assert request_id.startswith("participant-")
    assert tokenizer.decode(prompt_ids) == tokenizer.apply_chat_template(
        [user("Your move.")], tokenize=False, add_generation_prompt=True
    )
    assert params["stop_token_ids"] == player.format.stop_token_ids and params["max_new_tokens"] == 32


def test_seeds_are_derived_per_prompt_and_an_explicit_one_yields_to_the_sampling_params(tokenizer):
    engine = Recording(tokenizer)
    player = ModelParticipant(engine, tokenizer, seed=7)
    for text in ("a", "b", "a"):
        run_sync(player.reply([user(text)]))
    seeds = [params["seed"] for _, _, params in engine.requests]
    assert seeds[0] == seeds[2] != seeds[1]
    assert run_sync(ModelParticipant(engine, tokenizer, seed=8).reply([user("a")])).text == "[4]"
    assert engine.requests[-1][2]["seed"] != seeds[0]
    run_sync(player.reply([user("a")], seed=5))
    assert engine.requests[-1][2]["seed"] == 5
    pinned = ModelParticipant(engine, tokenizer, sampling_params={"seed": 1})
    run_sync(pinned.reply([user("a")], seed=5))
    assert engine.requests[-1][2]["seed"] == 1
    run_sync(ModelParticipant(engine, tokenizer).reply([user("a")]))
    assert "seed" not in engine.requests[-1][2]


def test_the_prompt_keeps_the_system_message_and_the_latest_within_its_budget(tokenizer):
    messages = [{"role": "system", "content": "Rules."}]
    for i in range(30):
        messages += [user(f"Question {i}?"), {"role": "assistant", "content": f"Answer {i}."}]
    messages.append(user("Last question?"))
    player = ModelParticipant(Recording(tokenizer), tokenizer, max_prompt_tokens=80)
    prompt = player.prompt(messages)
    assert len(prompt.ids) <= 80 < len(ModelParticipant(Recording(tokenizer), tokenizer).prompt(messages).ids)
    assert prompt.messages[0] == messages[0] and prompt.messages[-1] == messages[-1]
    assert "Question 0?" not in prompt.text and len(messages) == 62  # the caller's list is left alone


def test_failures_are_counted_and_the_first_reported(tokenizer, capsys):
    failing = ModelParticipant(Recording(tokenizer, error=EngineError("down")), tokenizer, name="Seat")
    for _ in range(2):
        with pytest.raises(EngineError, match="down"):
            run_sync(failing.reply([user("hi")]))
    assert failing.failures == failing.requests == 2
    err = capsys.readouterr().err
    assert err.count("turngym: Seat: EngineError: down") == 1
    silent = ModelParticipant(Recording(tokenizer, text=""), tokenizer)
    assert run_sync(silent.reply([user("hi")])).text == "" and silent.failures == 1


def test_an_opponent_and_a_user_are_both_model_participants(tokenizer):
    engine = Recording(tokenizer, text="Fine, thanks.")
    opponent = EngineOpponent(engine, tokenizer)
    simulated = LLMUser(engine=engine, tokenizer=tokenizer, max_new_tokens=8)
    assert isinstance(opponent, ModelParticipant) and isinstance(simulated.model, ModelParticipant)
    assert opponent([user("Your move.")]) == "Fine, thanks." and opponent.moves == 1
    reply = simulated.respond([user("Hi."), {"role": "assistant", "content": "How can I help?"}])
    assert reply.content == "Fine, thanks." and simulated.generated_tokens > 0
    request_id, prompt_ids, params = engine.requests[-1]
    shown = tokenizer.decode(prompt_ids)
    # The user's side: the agent speaks as `user`, the simulated user's own words are `assistant`.
    assert request_id.startswith("llm-user-") and params["max_new_tokens"] == 8
    assert "<|im_start|>user\nHow can I help?" in shown and "<|im_start|>assistant\nHi." in shown
