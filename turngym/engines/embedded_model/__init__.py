"""A tiny Qwen2-style causal LM and a locally trained BPE tokenizer, built on demand and cached.

Nothing is downloaded: the tokenizer is trained with the `tokenizers` library on text generated
here (`corpus.py`, `tokenizer.py`), the model is randomly initialised from a config (`model.py`). The
result is an ordinary Hugging Face directory (`AutoTokenizer` / `AutoModelForCausalLM.from_pretrained(path)`
work offline). The engines default to it; `python -m turngym.engines.embedded_model [template]` builds it and
prints the path.

Two chat-template families (`templates/*.jinja`, read by `chat_templates.py`) share the same tokenizer:
- ``"chatml"`` (default): Qwen2.5-style ChatML with tools listed in the system message, hermes
  ``<tool_call>`` blocks for assistant tool calls and ``<tool_response>`` blocks inside user turns.
  ``enable_thinking=False`` adds an empty ``<think>`` block after the generation prompt (Qwen3-style).
- ``"llama3"``: Llama-3.1-style headers, tools in the first user message, tool calls as bare JSON
  ``{"name", "parameters"}``, tool results in ``ipython`` turns.

Importing this package loads no torch or transformers; building does.
"""

from __future__ import annotations

from turngym.engines.embedded_model.chat_templates import CHAT_TEMPLATES
from turngym.engines.embedded_model.model import MODEL_CONFIG, build_embedded_model, is_embedded_model_dir
from turngym.engines.embedded_model.tokenizer import SPECIAL_TOKENS, STOP_TOKENS, VOCAB_SIZE

__all__ = [
    "CHAT_TEMPLATES",
    "MODEL_CONFIG",
    "SPECIAL_TOKENS",
    "STOP_TOKENS",
    "VOCAB_SIZE",
    "build_embedded_model",
    "is_embedded_model_dir",
    "main",
]


def main() -> None:
    """`python -m turngym.engines.embedded_model [template]`: build and print the path."""
    import sys

    print(build_embedded_model(template=sys.argv[1] if len(sys.argv) > 1 else "chatml"))
