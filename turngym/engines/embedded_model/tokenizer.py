"""The embedded model's tokenizer: special tokens, stop tokens and BPE training on the local corpus."""

from __future__ import annotations

from typing import Any

from turngym.engines.embedded_model.corpus import corpus

SPECIAL_TOKENS = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
    "<think>",
    "</think>",
    "<|begin_of_text|>",
    "<|start_header_id|>",
    "<|end_header_id|>",
    "<|eot_id|>",
    "<|eom_id|>",
    "<|python_tag|>",
]
# Tokens that end generation in each family (first one is the end-of-turn token).
STOP_TOKENS = {
    "chatml": ["<|im_end|>", "<|endoftext|>"],
    "llama3": ["<|eot_id|>", "<|eom_id|>", "<|endoftext|>"],
}
VOCAB_SIZE = 3072

# Qwen2's pre-tokenizer split: transformers forces `Qwen2Tokenizer` (which installs this split and an NFC
# normalizer) on any qwen2 checkpoint, so the tokenizer is trained with exactly what it will load with.
QWEN2_PRETOKENIZE_REGEX = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""


def train_tokenizer() -> Any:
    """A byte-level BPE (`tokenizers.Tokenizer`) with Qwen2's pre-tokenization, trained on the corpus."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(QWEN2_PRETOKENIZE_REGEX), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus(), trainer=trainer)
    return tok
