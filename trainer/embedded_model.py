"""A tiny Qwen2-style causal LM and a locally trained BPE tokenizer, built on demand and cached.

Nothing is downloaded: the tokenizer is trained with the `tokenizers` library on text generated
here, the model is randomly initialised from a config. The result is an ordinary Hugging Face
directory (`AutoTokenizer` / `AutoModelForCausalLM.from_pretrained(path)` work offline).

Two chat-template families share the same tokenizer:
- ``"chatml"`` (default): Qwen2.5-style ChatML with tools listed in the system message, hermes
  ``<tool_call>`` blocks for assistant tool calls and ``<tool_response>`` blocks inside user turns.
  ``enable_thinking=False`` adds an empty ``<think>`` block after the generation prompt (Qwen3-style).
- ``"llama3"``: Llama-3.1-style headers, tools in the first user message, tool calls as bare JSON
  ``{"name", "parameters"}``, tool results in ``ipython`` turns.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import tempfile
from pathlib import Path

BUILD_VERSION = "3"
_DEFAULT_ROOT = Path(os.environ.get("TURNGYM_CACHE", Path.home() / ".cache" / "turngym")) / "embedded"
_DONE_MARKER = "turngym_embedded.json"

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

MODEL_CONFIG = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 8192,
    "rms_norm_eps": 1e-6,
    "tie_word_embeddings": True,
    "rope_theta": 10000.0,
}
VOCAB_SIZE = 3072

# Both families write message content and a tool call's JSON the same way; only the key that holds
# the arguments differs ("arguments" in hermes blocks, "parameters" in Llama 3), so it is a parameter.
_MACROS = r"""
{%- macro render_content(content) -%}
{%- if content is string -%}{{- content -}}
{%- elif content is none -%}
{%- else -%}{%- for part in content -%}{%- if part.type == 'text' -%}{{- part.text -}}{%- endif -%}{%- endfor -%}
{%- endif -%}
{%- endmacro -%}
{%- macro render_call(tool_call, arguments_key) -%}
{%- set call = tool_call.function if tool_call.function is defined else tool_call -%}
{{- '{"name": "' + call.name + '", "' + arguments_key + '": ' -}}
{%- if call.arguments is string -%}{{- call.arguments -}}{%- else -%}{{- call.arguments | tojson -}}{%- endif -%}
{{- '}' -}}
{%- endmacro -%}
""".strip()

CHATML_TEMPLATE = (
    _MACROS
    + r"""
{%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0].role == 'system' %}
        {{- render_content(messages[0].content) }}
    {%- else %}
        {{- 'You are a helpful assistant.' }}
    {%- endif %}
    {{- "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
    {%- for tool in tools %}
        {{- "\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- else %}
    {%- if messages[0].role == 'system' %}
        {{- '<|im_start|>system\n' + render_content(messages[0].content) + '<|im_end|>\n' }}
    {%- else %}
        {{- '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n' }}
    {%- endif %}
{%- endif %}
{%- set think_prefix = '<think>\n\n</think>\n\n' if (enable_thinking is defined and enable_thinking is false) else '' %}
{%- for message in messages %}
    {%- if message.role == 'user' or (message.role == 'system' and not loop.first) %}
        {{- '<|im_start|>' + message.role + '\n' + render_content(message.content) + '<|im_end|>\n' }}
    {%- elif message.role == 'assistant' %}
        {%- set content = render_content(message.content) %}
        {%- if think_prefix and not content.startswith('<think>') %}
            {%- set content = think_prefix + content %}
        {%- endif %}
        {{- '<|im_start|>assistant\n' + content }}
        {%- if message.tool_calls %}
            {%- for tool_call in message.tool_calls %}
                {%- if content or not loop.first %}
                    {{- '\n' }}
                {%- endif %}
                {{- '<tool_call>\n' + render_call(tool_call, 'arguments') + '\n</tool_call>' }}
            {%- endfor %}
        {%- endif %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == 'tool' %}
        {%- if loop.first or messages[loop.index0 - 1].role != 'tool' %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' + render_content(message.content) + '\n</tool_response>' }}
        {%- if loop.last or messages[loop.index0 + 1].role != 'tool' %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' + think_prefix }}
{%- endif %}
""".strip()
)

LLAMA3_TEMPLATE = (
    _MACROS
    + r"""
{{- '<|begin_of_text|>' }}
{%- if messages[0].role == 'system' %}
    {%- set system_message = render_content(messages[0].content) %}
    {%- set messages = messages[1:] %}
{%- else %}
    {%- set system_message = 'You are a helpful assistant.' %}
{%- endif %}
{{- '<|start_header_id|>system<|end_header_id|>\n\n' }}
{%- if tools %}
    {{- 'Environment: ipython\n' }}
{%- endif %}
{{- system_message + '<|eot_id|>' }}
{%- set tools_pending = namespace(value=(tools is defined and tools)) %}
{%- for message in messages %}
    {%- if message.role == 'user' and tools_pending.value %}
        {%- set tools_pending.value = false %}
        {{- '<|start_header_id|>user<|end_header_id|>\n\n' }}
        {{- 'Given the following functions, please respond with a JSON for a function call with its proper arguments that best answers the given prompt.\n\n' }}
        {{- 'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}. Do not use variables.\n\n' }}
        {%- for tool in tools %}
            {{- tool | tojson(indent=4) + '\n\n' }}
        {%- endfor %}
        {{- render_content(message.content) + '<|eot_id|>' }}
    {%- elif message.role == 'assistant' and message.tool_calls %}
        {#- Calls as Llama 3 writes them: bare JSON, `; `-joined, after `<|python_tag|>` when text precedes. #}
        {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' + render_content(message.content) }}
        {%- if render_content(message.content) %}
            {{- '<|python_tag|>' }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if not loop.first %}
                {{- '; ' }}
            {%- endif %}
            {{- render_call(tool_call, 'parameters') }}
        {%- endfor %}
        {{- '<|eot_id|>' }}
    {%- elif message.role == 'tool' or message.role == 'ipython' %}
        {{- '<|start_header_id|>ipython<|end_header_id|>\n\n' + render_content(message.content) + '<|eot_id|>' }}
    {%- else %}
        {{- '<|start_header_id|>' + message.role + '<|end_header_id|>\n\n' + render_content(message.content) + '<|eot_id|>' }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}
{%- endif %}
""".strip()
)

CHAT_TEMPLATES = {"chatml": CHATML_TEMPLATE, "llama3": LLAMA3_TEMPLATE}


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
        },
        sort_keys=True,
    )
    return hashlib.sha256(payload.encode()).hexdigest()[:12]


def _corpus(seed: int = 0, n_lines: int = 6000) -> list[str]:
    """Generated game/chat/tool-call text the tokenizer learns its merges from."""
    rng = random.Random(seed)
    words = [
        "the",
        "a",
        "an",
        "guess",
        "number",
        "higher",
        "lower",
        "correct",
        "wrong",
        "you",
        "I",
        "we",
        "it",
        "is",
        "are",
        "was",
        "to",
        "of",
        "and",
        "in",
        "on",
        "for",
        "with",
        "your",
        "my",
        "game",
        "turn",
        "move",
        "board",
        "player",
        "score",
        "win",
        "lose",
        "draw",
        "try",
        "again",
        "please",
        "think",
        "answer",
        "tool",
        "call",
        "result",
        "error",
        "value",
        "function",
        "name",
        "arguments",
        "parameters",
        "description",
        "type",
        "object",
        "string",
        "integer",
        "array",
        "boolean",
        "required",
        "properties",
        "items",
        "query",
        "search",
        "read",
        "write",
        "file",
        "code",
        "python",
        "print",
        "return",
        "def",
        "class",
        "import",
        "true",
        "false",
        "null",
        "hello",
        "thanks",
        "sure",
        "let",
        "me",
        "check",
        "here",
        "what",
        "which",
        "where",
        "why",
        "how",
        "step",
        "next",
        "done",
        "finished",
        "invalid",
        "format",
        "expected",
        "got",
        "between",
        "range",
        "secret",
        "left",
        "right",
        "up",
        "down",
    ]
    syllables = [
        "ka",
        "lo",
        "mi",
        "ne",
        "ru",
        "ta",
        "vo",
        "shi",
        "pre",
        "con",
        "ex",
        "ing",
        "ly",
        "tion",
        "ment",
        "able",
        "er",
        "est",
        "un",
        "re",
        "de",
        "pro",
        "tra",
        "qui",
        "zo",
        "ba",
    ]
    words += ["".join(rng.choice(syllables) for _ in range(rng.randint(1, 4))) for _ in range(1500)]
    names = ["guess", "search", "read_file", "run_python", "calculator", "lookup", "submit", "move"]
    lines = []
    for _ in range(n_lines):
        kind = rng.random()
        if kind < 0.45:
            n = rng.randint(3, 18)
            sent = " ".join(rng.choice(words) for _ in range(n))
            lines.append(sent.capitalize() + rng.choice([".", "?", "!", ":", ""]))
        elif kind < 0.65:
            args = {rng.choice(words): rng.choice([rng.randint(0, 999), rng.choice(words)])}
            call = {"name": rng.choice(names), "arguments": args}
            lines.append("<tool_call>\n" + json.dumps(call) + "\n</tool_call>")
        elif kind < 0.8:
            lines.append(
                " ".join(str(rng.randint(0, 10 ** rng.randint(1, 4))) for _ in range(rng.randint(1, 8)))
            )
        elif kind < 0.9:
            schema = {
                "type": "function",
                "function": {
                    "name": rng.choice(names),
                    "description": " ".join(rng.choice(words) for _ in range(6)),
                    "parameters": {
                        "type": "object",
                        "properties": {rng.choice(words): {"type": rng.choice(["integer", "string"])}},
                        "required": [],
                    },
                },
            }
            lines.append(json.dumps(schema, indent=rng.choice([None, 4])))
        else:
            lines.append(
                f"def {rng.choice(names)}(x):\n    return x {rng.choice('+-*')} {rng.randint(0, 99)}\n"
            )
    return lines


# Qwen2's pre-tokenizer split: transformers forces `Qwen2Tokenizer` (which installs this split and an NFC
# normalizer) on any qwen2 checkpoint, so the tokenizer is trained with exactly what it will load with.
QWEN2_PRETOKENIZE_REGEX = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""


def _train_tokenizer():
    """A byte-level BPE with Qwen2's pre-tokenization, trained on the generated corpus."""
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
    tok.train_from_iterator(_corpus(), trainer=trainer)
    return tok


def _build(dest: Path, template: str) -> None:
    """Write tokenizer + model files into `dest` (an empty directory)."""
    import torch
    from transformers import GenerationConfig, PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    raw = _train_tokenizer()
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


def main() -> None:
    """`python -m trainer.embedded_model [template]`: build and print the path."""
    import sys

    print(build_embedded_model(template=sys.argv[1] if len(sys.argv) > 1 else "chatml"))


if __name__ == "__main__":
    main()
