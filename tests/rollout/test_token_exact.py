"""Token-exact assembly: the whole conversation rendered by the chat template equals the assembled ids.

Random multi-turn episodes (text replies, tool calls, several tool results, unreadable calls, empty
think blocks, env turns with zero to three messages) are driven by a scripted engine that writes the
template's canonical tokens, for two chat-template families.
"""

import asyncio
import json
import random

import pytest

from envs.core.assistant_turn import AssistantTurn
from rollout.episode import EpisodeConfig, run_episode
from rollout.scripted_engine import ScriptedEngine
from turngym.chat.format import ChatFormat

WORDS = [
    "guess",
    "higher",
    "lower",
    "number",
    "the",
    "is",
    "a",
    "correct",
    "try",
    "again",
    "result",
    "café",
    "naïve",
    "42",
    "7",
    "-3",
    "{x}",
    "[y]",
    "ok",
]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "guess",
            "description": "Guess the number.",
            "parameters": {
                "type": "object",
                "properties": {"number": {"type": "integer"}},
                "required": ["number"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "search",
            "description": "Search notes.",
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {"type": "string"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["query"],
            },
        },
    },
]


def _sentence(rng, lo=1, hi=12):
    words = [rng.choice(WORDS) for _ in range(rng.randint(lo, hi))]
    text = " ".join(words)
    if rng.random() < 0.3:
        text += "\n" + " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 5)))
    return text


class RandomChatEnv:
    """A minimal env (the contract only) whose replies are random: 0-3 user/tool messages per turn."""

    max_action_chars = 32768
    tool_call_format = "hermes"

    def __init__(self, tools, max_turns=6):
        self.tool_schemas = tools
        self.max_turns = max_turns

    @property
    def unwrapped(self):
        return self

    def reset(self, seed=None, options=None):
        self.rng = random.Random(seed)
        self.turn = 0
        self.length = self.rng.randint(1, self.max_turns)
        opening = [{"role": "user", "content": _sentence(self.rng)}]
        if self.rng.random() < 0.6:
            opening.insert(0, {"role": "system", "content": _sentence(self.rng)})
        return opening, {}

    async def areset(self, *, seed=None, options=None):
        return self.reset(seed=seed, options=options)

    def step(self, action):
        return asyncio.run(self.astep(action))

    def set_tool_call_format(self, tool_call_format):
        self.tool_call_format = tool_call_format

    def set_turn_limits(self, **limits):
        raise NotImplementedError("RandomChatEnv has no turn limits")

    async def astep(self, action):
        self.turn += 1
        rng = self.rng
        out = []
        # With tools the rollout hands the env its parse of the reply (an AssistantTurn), else the text.
        calls = action.tool_calls if isinstance(action, AssistantTurn) else ()
        for call in calls:
            out.append(
                {"role": "tool", "tool_call_id": call.id, "name": call.name, "content": _sentence(rng)}
            )
        if not calls or rng.random() < 0.3:
            out.extend({"role": "user", "content": _sentence(rng)} for _ in range(rng.randint(0, 2)))
        reward = round(rng.uniform(-1, 1), 3)
        done = self.turn >= self.length
        return out, reward, done, False, {"format_error": None, "success": done and reward > 0}

    def close(self):
        pass


def random_turn(turn, rng):
    """A planned assistant turn: text, tool calls, an unreadable call, or an empty think block."""
    r = rng.random()
    think = rng.random() < 0.25
    prefix = "<think>\n\n</think>\n\n" if think else ""
    if r < 0.35:
        return {"role": "assistant", "content": prefix + _sentence(rng)}
    if r < 0.8:
        calls = []
        for i in range(rng.randint(1, 3)):
            if rng.random() < 0.5:
                name, args = "guess", {"number": rng.randint(-5, 100)}
            else:
                name, args = "search", {"query": _sentence(rng, 1, 3), "tags": [rng.choice(WORDS)]}
            calls.append(
                {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": args}}
            )
        content = prefix + _sentence(rng) if rng.random() < 0.5 else prefix.rstrip("\n") if think else ""
        return {"role": "assistant", "content": content, "tool_calls": calls}
    if r < 0.9:
        return '<tool_call>\n{"name": "guess", "arguments": {number: 5}\n</tool_call>'  # unreadable JSON
    return {"role": "assistant", "content": prefix + "I will " + rng.choice(WORDS)}


def _rendered_ids(fmt: ChatFormat, traj):
    last_assistant = max(i for i, m in enumerate(traj.messages) if m["role"] == "assistant")
    return fmt.encode(fmt.render(traj.messages[: last_assistant + 1]))


def _check(traj, fmt):
    assert not traj.failed, traj.error
    ids = traj.prompt_ids + traj.response_ids
    expected = _rendered_ids(fmt, traj)
    # At most the trailing separator after the last generated turn may differ.
    tail = fmt.encode(fmt.separator) if fmt.separator else []
    assert ids == expected or ids + tail == expected, _diff(fmt, ids, expected)
    assert len(traj.loss_mask) == len(traj.logprobs) == len(traj.response_ids)
    for t in traj.turns:
        assert all(traj.loss_mask[t.start : t.end]) and all(lp != 0 for lp in traj.logprobs[t.start : t.end])
        assert traj.response_ids[t.end - 1] == fmt.end_of_turn_id
    gen = sum(t.end - t.start for t in traj.turns)
    assert sum(traj.loss_mask) == gen
    assert all(lp == 0 for lp, m in zip(traj.logprobs, traj.loss_mask, strict=True) if not m)


def _diff(fmt, got, want):
    n = next((i for i, (a, b) in enumerate(zip(got, want, strict=False)) if a != b), min(len(got), len(want)))
    return f"first difference at {n}:\n got  {fmt.tokenizer.decode(got[n - 5 : n + 15])!r}\n want {fmt.tokenizer.decode(want[n - 5 : n + 15])!r}"


FAMILIES = [
    ("chatml", {}),
    ("chatml", {"enable_thinking": False}),
    ("llama3", {}),
]


@pytest.mark.parametrize(("family", "kwargs"), FAMILIES, ids=["chatml", "chatml-nothink", "llama3"])
@pytest.mark.parametrize("with_tools", [True, False], ids=["tools", "notools"])
def test_random_episodes_are_token_exact(family, kwargs, with_tools, tokenizer, llama3_tokenizer):
    tok = tokenizer if family == "chatml" else llama3_tokenizer
    tools = TOOLS if with_tools else []
    engine = ScriptedEngine(tok, random_turn, tools=tools or None, chat_template_kwargs=kwargs, seed=1)
    cfg = EpisodeConfig(max_response_tokens=100_000, max_new_tokens=None, chat_template_kwargs=kwargs)
    fmt = ChatFormat(tok, tools or None, kwargs)

    async def run():
        return await asyncio.gather(
            *[
                run_episode(RandomChatEnv(tools), engine, tok, seed=s, config=cfg, request_id=f"ep{s}")
                for s in range(40)
            ]
        )

    trajs = asyncio.run(run())
    kinds = set()
    for traj in trajs:
        _check(traj, fmt)
        for m in traj.messages:
            kinds.add(m["role"] + ("+calls" if m.get("tool_calls") else ""))
    assert sum(t.num_turns for t in trajs) > 80
    if with_tools:
        assert {"assistant+calls", "tool", "user", "assistant"} <= kinds


@pytest.mark.parametrize("family", ["chatml", "llama3"])
def test_separator_kept_at_assistant_to_tool_boundary(family, tokenizer, llama3_tokenizer):
    """The template's separator after the end-of-turn token opens the env segment (not dropped)."""
    tok = tokenizer if family == "chatml" else llama3_tokenizer
    fmt = ChatFormat(tok, TOOLS)
    assert fmt.separator == ("\n" if family == "chatml" else "")
    suffix = fmt.suffix_text([{"role": "tool", "tool_call_id": "c", "name": "guess", "content": "higher"}])
    if family == "chatml":
        assert (
            suffix
            == "\n<|im_start|>user\n<tool_response>\nhigher\n</tool_response><|im_end|>\n<|im_start|>assistant\n"
        )
    else:
        assert (
            suffix
            == "<|start_header_id|>ipython<|end_header_id|>\n\nhigher<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
        )


def test_empty_think_generation_prompt_is_in_context_tokens(tokenizer):
    fmt = ChatFormat(tokenizer, None, {"enable_thinking": False})
    assert fmt.suffix_text([{"role": "user", "content": "x"}]).endswith(
        "<|im_start|>assistant\n<think>\n\n</think>\n\n"
    )
    assert fmt.assistant_text({"role": "assistant", "content": "7"}) == "7<|im_end|>"


def test_guess_number_env_token_exact_with_expert_turns(tokenizer):
    """The real guess-number env, played by its expert through tool calls, stays token-exact."""
    import envs

    env = envs.make("guess-number-v0")

    def expert(turn, rng):
        number = env.unwrapped.expert_action().strip()
        call = {
            "id": "call_0",
            "type": "function",
            "function": {"name": "guess", "arguments": {"number": int(number)}},
        }
        return {"role": "assistant", "content": "", "tool_calls": [call]}

    engine = ScriptedEngine(tokenizer, expert, tools=env.unwrapped.tool_schemas)
    traj = asyncio.run(run_episode(env, engine, tokenizer, seed=3, config=EpisodeConfig(max_new_tokens=None)))
    fmt = ChatFormat(tokenizer, env.unwrapped.tool_schemas)
    _check(traj, fmt)
    assert traj.termination == "terminated" and traj.success is not False
    assert traj.total_reward > 0 and traj.metrics["tool_calls"] == traj.num_turns
    assert traj.token_rewards()[traj.reward_positions[-1]] == traj.rewards[-1]
    assert json.loads(traj.to_json())["total_reward"] == traj.total_reward


# ----- a real tokenizer and template: SmolLM2-135M-Instruct (ChatML, a default system prompt, no tools) -----
SMOLLM2_DEFAULT_SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"


@pytest.fixture(scope="session")
def smollm2_tokenizer():
    """SmolLM2's tokenizer: from the named model's converted folder when cached, else read from its GGUF."""
    from transformers import AutoTokenizer

    from turngym.engines.named_models import (
        RECORD,
        ModelSourceError,
        cached_model_dir,
        file_sha256,
        gguf_source,
    )

    try:
        name, gguf_path = gguf_source("smollm2-135m-instruct")
    except ModelSourceError as exc:
        pytest.skip(str(exc))
    cached = cached_model_dir(name, file_sha256(gguf_path))
    if (cached / RECORD).is_file():
        return AutoTokenizer.from_pretrained(cached)
    pytest.importorskip("gguf", reason="reading a GGUF tokenizer needs the gguf package")
    return AutoTokenizer.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name)


def hermes_turn(turn, rng):
    """A planned turn as the text a model writes when its template has no tools: prose or <tool_call> blocks."""
    r = rng.random()
    if r < 0.35:
        return _sentence(rng)
    if r < 0.85:
        blocks = []
        for _ in range(rng.randint(1, 3)):
            if rng.random() < 0.5:
                call = {"name": "guess", "arguments": {"number": rng.randint(-5, 100)}}
            else:
                call = {
                    "name": "search",
                    "arguments": {"query": _sentence(rng, 1, 3), "tags": [rng.choice(WORDS)]},
                }
            blocks.append(f"<tool_call>\n{json.dumps(call, ensure_ascii=False)}\n</tool_call>")
        lead = _sentence(rng) + "\n" if rng.random() < 0.5 else ""
        return lead + "\n".join(blocks)
    return '<tool_call>\n{"name": "guess", "arguments": {number: 5}\n</tool_call>'  # unreadable JSON


@pytest.mark.parametrize("with_tools", [True, False], ids=["tools", "notools"])
def test_random_episodes_are_token_exact_on_smollm2(with_tools, smollm2_tokenizer):
    tok = smollm2_tokenizer
    tools = TOOLS if with_tools else []
    engine = ScriptedEngine(tok, hermes_turn, seed=1)
    cfg = EpisodeConfig(max_response_tokens=100_000, max_new_tokens=None)
    fmt = ChatFormat(tok)  # the template renders no tools: they are in the recorded system message

    async def run():
        envs_ = [RandomChatEnv(tools) for _ in range(30)]
        return await asyncio.gather(
            *[
                run_episode(e, engine, tok, seed=s, config=cfg, request_id=f"ep{s}")
                for s, e in enumerate(envs_)
            ]
        )

    trajs = asyncio.run(run())
    calls = opened_without_system = 0
    for traj in trajs:
        _check(traj, fmt)
        system = traj.messages[0]
        assert system["role"] == "system" or not with_tools
        assert ("<tools>" in system["content"]) == with_tools
        prompt = tok.decode(traj.prompt_ids)
        if SMOLLM2_DEFAULT_SYSTEM in prompt:
            opened_without_system += 1
            assert prompt.startswith(f"<|im_start|>system\n{SMOLLM2_DEFAULT_SYSTEM}")
        for m in traj.messages:
            if m.get("tool_calls"):
                calls += 1
                assert "<tool_call>" in m["content"]  # kept as written: the template renders content only
    assert sum(t.num_turns for t in trajs) > 50 and opened_without_system > 0
    assert (calls > 10) == with_tools


def test_smollm2_default_system_prompt_and_tools_in_the_system_message(smollm2_tokenizer, tokenizer, caplog):
    from rollout.tool_prompt import (
        default_system_prompt,
        place_tools,
        template_renders_tools,
        tools_system_text,
    )

    assert not template_renders_tools(smollm2_tokenizer) and template_renders_tools(tokenizer)
    assert default_system_prompt(smollm2_tokenizer) == SMOLLM2_DEFAULT_SYSTEM
    assert default_system_prompt(tokenizer) == "You are a helpful assistant."  # the embedded ChatML one
    user = [{"role": "user", "content": "go"}]
    with caplog.at_level("WARNING", logger="rollout.tool_prompt"):
        bare, no_tools = place_tools(smollm2_tokenizer, user, TOOLS)
        with_system, _ = place_tools(
            smollm2_tokenizer, [{"role": "system", "content": "Play."}, *user], TOOLS
        )
    assert no_tools is None and bare[1:] == user and with_system[1:] == user
    assert bare[0]["content"] == f"{SMOLLM2_DEFAULT_SYSTEM}\n\n{tools_system_text(TOOLS)}"
    assert with_system[0]["content"] == f"Play.\n\n{tools_system_text(TOOLS)}"
    warnings = [r.getMessage() for r in caplog.records if r.name == "rollout.tool_prompt"]
    assert len(warnings) <= 1 and all("renders no tools" in w and "\n" not in w for w in warnings)
    # Templates that render tools, and envs without tools, are left alone.
    assert place_tools(tokenizer, user, TOOLS) == (user, TOOLS)
    assert place_tools(smollm2_tokenizer, user, []) == (user, None)
    # Every schema is in the block as one JSON line, and the call example is the format turngym.chat.calls reads.
    block = tools_system_text(TOOLS)
    assert all(json.dumps(t) in block.splitlines() for t in TOOLS) and "<tool_call>" in block


def test_smollm2_special_token_boundaries(smollm2_tokenizer):
    tok = smollm2_tokenizer
    fmt = ChatFormat(tok)
    im_start, im_end = tok.convert_tokens_to_ids("<|im_start|>"), tok.convert_tokens_to_ids("<|im_end|>")
    assert (fmt.end_of_turn, fmt.separator, fmt.end_of_turn_id) == ("<|im_end|>", "\n", im_end)
    assert fmt.stop_token_ids[0] == im_end
    tool = {"role": "tool", "tool_call_id": "c", "name": "guess", "content": "higher"}
    assert fmt.suffix_text([tool]) == "\n<|im_start|>tool\nhigher<|im_end|>\n<|im_start|>assistant\n"
    suffix = fmt.suffix_ids([tool])
    assert suffix[0] == fmt.encode("\n")[0] and suffix[1] == im_start  # separator, then the next turn opens
    assert suffix.count(im_start) == 2 and suffix.count(im_end) == 1
    assert fmt.assistant_text({"role": "assistant", "content": "7"}) == "7<|im_end|>"


def test_guess_number_env_token_exact_on_smollm2(smollm2_tokenizer):
    """The real guess-number env, its expert's guesses written as <tool_call> text, on SmolLM2's template."""
    import envs

    tok = smollm2_tokenizer
    env = envs.make("guess-number-v0")

    def expert(turn, rng):
        call = {"name": "guess", "arguments": {"number": int(env.unwrapped.expert_action().strip())}}
        return f"<tool_call>\n{json.dumps(call)}\n</tool_call>"

    engine = ScriptedEngine(tok, expert)
    traj = asyncio.run(run_episode(env, engine, tok, seed=3, config=EpisodeConfig(max_new_tokens=None)))
    _check(traj, ChatFormat(tok))
    assert traj.termination == "terminated" and traj.success is not False
    assert traj.metrics["tool_calls"] == traj.num_turns and traj.metrics["format_errors"] == 0
    assert "<tools>" in traj.messages[0]["content"] and '"name": "guess"' in traj.messages[0]["content"]


def test_trainer_prompt_budget_counts_the_listed_tools_on_smollm2(smollm2_tokenizer):
    """The trainer's prompt-length check counts the prompt the rollout sends, tools block included."""
    import envs
    from trainer.checks.prompt_budget import longest_prompts

    tok = smollm2_tokenizer
    env = envs.make("guess-number-v0")
    messages, _ = env.reset(seed=5)
    row = {"extra_info": {"env_id": "guess-number-v0", "env_kwargs": "{}", "seed": 5}, "prompt": messages}
    engine = ScriptedEngine(tok, lambda turn, rng: "7")
    config = EpisodeConfig(max_turns=1, max_new_tokens=None)
    traj = asyncio.run(run_episode(envs.make("guess-number-v0"), engine, tok, seed=5, config=config))
    assert "<tools>" in tok.decode(traj.prompt_ids)
    assert longest_prompts([row], tok)["guess-number-v0"] == (len(traj.prompt_ids), 5)
