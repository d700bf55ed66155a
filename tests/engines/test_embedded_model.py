"""The embedded tiny model: builds offline, loads with Auto classes, templates render tools, concurrent builds."""

import json
import multiprocessing as mp

import pytest

from turngym.engines.embedded_model import CHAT_TEMPLATES, STOP_TOKENS, build_embedded_model

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "guess",
            "description": "Guess the number",
            "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
        },
    }
]
CONV = [
    {"role": "system", "content": "Play the game."},
    {"role": "user", "content": "Guess a number between 1 and 10."},
    {
        "role": "assistant",
        "content": "Let me try.",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "guess", "arguments": {"n": 5}}}
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "name": "guess", "content": "higher"},
]


@pytest.mark.parametrize("template", sorted(CHAT_TEMPLATES))
def test_loads_offline_and_renders_tools(template, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = build_embedded_model(template=template)
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path)
    assert 2000 <= len(tok) <= 4096
    assert model.config.vocab_size >= len(tok)
    assert tok.eos_token == STOP_TOKENS[template][0]
    for special in ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<tool_call>", "</tool_call>", "<think>"]:
        assert len(tok.encode(special, add_special_tokens=False)) == 1
    text = tok.apply_chat_template(CONV, tools=TOOLS, tokenize=False, add_generation_prompt=True)
    assert '"name": "guess"' in text and "Guess the number" in text
    assert "higher" in text
    if template == "chatml":
        assert '<tool_call>\n{"name": "guess", "arguments": {"n": 5}}\n</tool_call><|im_end|>' in text
        assert "<|im_start|>user\n<tool_response>\nhigher\n</tool_response><|im_end|>" in text
        assert text.endswith("<|im_start|>assistant\n")
    else:
        assert '{"name": "guess", "parameters": {"n": 5}}<|eot_id|>' in text
        assert "<|start_header_id|>ipython<|end_header_id|>\n\nhigher<|eot_id|>" in text
        assert text.endswith("<|start_header_id|>assistant<|end_header_id|>\n\n")
    import torch

    ids = tok.encode(text, add_special_tokens=False)
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits
    assert logits.shape == (1, len(ids), model.config.vocab_size)


def test_chatml_empty_think_generation_prompt():
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(build_embedded_model())
    text = tok.apply_chat_template(
        CONV[:2], tokenize=False, add_generation_prompt=True, enable_thinking=False
    )
    assert text.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    hist = tok.apply_chat_template(
        CONV[:2] + [{"role": "assistant", "content": "7"}], tokenize=False, enable_thinking=False
    )
    assert hist.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n7<|im_end|>\n")


def test_idempotent_returns_same_dir_without_rebuilding():
    first = build_embedded_model()
    stamp = (first / "model.safetensors").stat().st_mtime_ns
    assert build_embedded_model() == first
    assert (first / "model.safetensors").stat().st_mtime_ns == stamp


def _build_in(path):
    return str(build_embedded_model(path))


@pytest.mark.slow
def test_concurrent_builders_agree(tmp_path):
    target = tmp_path / "model"
    with mp.get_context("spawn").Pool(3) as pool:
        results = pool.map(_build_in, [target] * 3)
    assert set(results) == {str(target)}
    assert json.loads((target / "turngym_embedded.json").read_text())["template"] == "chatml"
    assert not [p for p in tmp_path.iterdir() if p.name != "model"], "temp build dirs left behind"
    from transformers import AutoTokenizer

    assert len(AutoTokenizer.from_pretrained(target)) > 2000


def test_cache_dir_changes_with_the_corpus(monkeypatch):
    from turngym.engines.embedded_model import model

    before = model._version_hash("chatml")
    monkeypatch.setattr(model, "corpus_digest", lambda: "another corpus")
    assert model._version_hash("chatml") != before


def test_templates_ship_as_package_data():
    from importlib.resources import files

    folder = files("turngym.engines.embedded_model").joinpath("templates")
    assert {f"{name}.jinja" for name in CHAT_TEMPLATES} <= {p.name for p in folder.iterdir()}


def test_unknown_template_is_a_clear_error():
    with pytest.raises(ValueError, match="chatml"):
        build_embedded_model(template="nope")


@pytest.mark.parametrize("reply", ["3 up 7 slate left 12 crane down 5 the number " * 4, "up"])
def test_default_budget_holds_a_whole_failing_episode(reply):
    """With the embedded defaults an episode ends by its turn limit (or the game), never by running out
    of response budget: every reply cut at turngym.max_tokens_per_turn (or a legal move that gets
    nowhere) plus the env's answer, for max_assistant_turns turns, fits data.max_response_length."""
    import asyncio

    from transformers import AutoTokenizer

    import envs
    from rollout.episode import EpisodeConfig, run_episode
    from rollout.scripted_engine import ScriptedEngine
    from trainer.compose import compose_config, env_entries

    cfg = compose_config(["env=text-game", "trainer.device=cpu"])
    tokenizer = AutoTokenizer.from_pretrained(build_embedded_model())
    episode = EpisodeConfig(
        max_turns=int(cfg.actor_rollout_ref.rollout.multi_turn.max_assistant_turns),
        max_response_tokens=int(cfg.data.max_response_length),
        max_new_tokens=int(cfg.turngym.max_tokens_per_turn),
    )
    for entry in env_entries(cfg):
        for seed in range(3):
            engine = ScriptedEngine(tokenizer, lambda turn, rng: reply)
            env = envs.make(entry["id"], **entry["kwargs"])
            traj = asyncio.run(run_episode(env, engine, tokenizer, seed=seed, config=episode))
            assert not traj.failed, traj.error
            assert not traj.metrics["overflow"], (entry["id"], seed, traj.termination, len(traj.response_ids))
            assert traj.termination in ("max_turns", "terminated", "truncated")
