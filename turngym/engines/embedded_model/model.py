"""The embedded model's config, its build into a Hugging Face directory, and the on-disk cache."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

from turngym.engines.embedded_model.chat_templates import CHAT_TEMPLATES
from turngym.engines.embedded_model.corpus import corpus_digest
from turngym.engines.embedded_model.tokenizer import (
    QWEN2_PRETOKENIZE_REGEX,
    SPECIAL_TOKENS,
    STOP_TOKENS,
    VOCAB_SIZE,
    train_tokenizer,
)

BUILD_VERSION = "3"
_DEFAULT_ROOT = Path(os.environ.get("TURNGYM_CACHE", Path.home() / ".cache" / "turngym")) / "embedded"
_DONE_MARKER = "turngym_embedded.json"

MODEL_CONFIG = {
    "hidden_size": 128,
    "intermediate_size": 256,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 8192,
    "rms_norm_eps": 1e-6,
    "tie_word_embeddings": True,
    "rope_theta": 10000.0,
}


def _version_hash(template: str) -> str:
    """Hash of everything that determines the built files, so a change rebuilds into a new dir."""
    payload = json.dumps(
        {
            "v": BUILD_VERSION,
            "template": template,
            "tmpl": CHAT_TEMPLATES[template],
            "cfg": MODEL_CONFIG,
            "vocab": VOCAB_SIZE,
            "special": SPECIAL_TOKENS,
            "pretokenize": QWEN2_PRETOKENIZE_REGEX,
            "corpus": corpus_digest(),
        },
        sort_keys=True,
    )
    return hashlib.sha256(payload.encode()).hexdigest()[:12]


def _build(dest: Path, template: str) -> None:
    """Write tokenizer + model files into `dest` (an empty directory)."""
    import torch
    from transformers import GenerationConfig, PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    raw = train_tokenizer()
    stops = STOP_TOKENS[template]
    hf_tok = PreTrainedTokenizerFast(
        tokenizer_object=raw,
        eos_token=stops[0],
        pad_token="<|endoftext|>",
        bos_token=None,
        unk_token=None,
        additional_special_tokens=[t for t in SPECIAL_TOKENS if t not in (stops[0], "<|endoftext|>")],
        model_max_length=MODEL_CONFIG["max_position_embeddings"],
        clean_up_tokenization_spaces=False,
    )
    hf_tok.chat_template = CHAT_TEMPLATES[template]
    hf_tok.save_pretrained(dest)

    vocab = len(hf_tok)
    padded_vocab = (vocab + 63) // 64 * 64
    stop_ids = [hf_tok.convert_tokens_to_ids(t) for t in stops]
    cfg_kwargs = {k: v for k, v in MODEL_CONFIG.items() if k != "rope_theta"}
    config = Qwen2Config(
        vocab_size=padded_vocab,
        bos_token_id=None,
        eos_token_id=stop_ids,
        pad_token_id=hf_tok.pad_token_id,
        rope_parameters={"rope_type": "default", "rope_theta": MODEL_CONFIG["rope_theta"]},
        **cfg_kwargs,
    )
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(config)
    model.generation_config = GenerationConfig(eos_token_id=stop_ids, pad_token_id=hf_tok.pad_token_id)
    model.save_pretrained(dest, safe_serialization=True)
    (dest / _DONE_MARKER).write_text(
        json.dumps({"version": BUILD_VERSION, "template": template, "stop_tokens": stops, "vocab": vocab})
    )


def is_embedded_model_dir(path: str | os.PathLike) -> bool:
    """Whether `path` is a built embedded-model directory (any chat template), by its build marker.

    >>> is_embedded_model_dir("/no/such/folder")
    False
    """
    return (Path(path) / _DONE_MARKER).is_file()


def build_embedded_model(path: str | os.PathLike | None = None, template: str = "chatml") -> Path:
    """Build (once) and return the directory of the tiny embedded model with the given chat template."""
    if template not in CHAT_TEMPLATES:
        raise ValueError(f"unknown chat template family {template!r}; choose one of {sorted(CHAT_TEMPLATES)}")
    final = Path(path) if path is not None else _DEFAULT_ROOT / f"{template}-{_version_hash(template)}"
    if (final / _DONE_MARKER).exists():
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.tmp-", dir=final.parent))
    try:
        tmp.chmod(0o755)
        _build(tmp, template)
        try:
            os.rename(tmp, final)
        except OSError:
            # Another process finished first (the target exists and is non-empty): use theirs.
            if not (final / _DONE_MARKER).exists():
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return final
