"""llm-user: a persona role-played by the tiny embedded model through rollout.HFEngine (plumbing, not quality)."""

import asyncio

import pytest

import interactions
from interactions.llm_user import swap_roles


def test_swap_roles_hides_system_and_tools():
    conversation = [
        {"role": "system", "content": "agent rules"},
        {"role": "user", "content": "I need shoes."},
        {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "search"}}]},
        {"role": "tool", "content": "results", "name": "search", "tool_call_id": "c0"},
        {"role": "assistant", "content": "What size?"},
    ]
    assert swap_roles(conversation) == [
        {"role": "assistant", "content": "I need shoes."},
        {"role": "user", "content": "What size?"},
    ]


def test_engine_must_have_generate():
    with pytest.raises(TypeError, match="async `generate`"):
        interactions.make("llm-user", engine=object(), tokenizer=None)


@pytest.fixture(scope="module")
def tiny():
    from turngym.engines.embedded_model import build_embedded_model
    from turngym.engines.hf_engine import HFEngine

    path = build_embedded_model()
    return path, HFEngine(str(path), max_batch_size=4, default_max_new_tokens=16)


@pytest.mark.slow
def test_llm_user_drives_a_conversation_env(tiny):
    from envs.conversations.interaction_env import InteractionEnv

    path, engine = tiny
    user = interactions.make(
        "llm-user",
        engine=engine,
        tokenizer=str(path),
        persona="A hiker who needs waterproof boots.",
        goal="Find boots under $100.",
        sampling_params={"temperature": 0.0},
        max_new_tokens=12,
        max_turns=2,
    )
    prompt = user.tokenizer.decode(user.encode([{"role": "system", "content": user.system_prompt()}]))
    assert "A hiker who needs waterproof boots." in prompt and "[DONE]" in prompt

    async def episode():
        env = InteractionEnv(interaction=user, system_prompt="You are a shop assistant.")
        messages, _ = env.reset(seed=0)  # no configured opening: the model writes it
        assert messages[0]["role"] == "system" and messages[1]["role"] == "user" and messages[1]["content"]
        first = await env.astep("Hello! What are you looking for?")
        second = await env.astep("We have boots for $80.")
        return first, second

    first, second = asyncio.run(episode())
    assert first[0][0]["role"] == "user" and first[0][0]["content"] and first[2] is False
    assert second[2] is True  # max_turns reached
    info = second[4]
    assert info["user_turns"] == 2 and info["user_tokens"] > 0 and info["success"] in (True, False)
    # The sync path works too (outside any event loop).
    user.start({"opening": "Hi there."})
    reply = user.respond(
        [{"role": "user", "content": "Hi there."}, {"role": "assistant", "content": "Hello!"}]
    )
    assert isinstance(reply.content, str) and reply.content and reply.metrics["user_tokens"] <= 12
