"""The text the embedded tokenizer learns its BPE merges from: game, chat and tool-call lines."""

from __future__ import annotations

import hashlib
import json
import random
from functools import cache

from turngym.chat.calls.formats import write_calls


def corpus(seed: int = 0, n_lines: int = 6000) -> list[str]:
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
            lines.append(write_calls([(rng.choice(names), args)], "hermes"))
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


@cache
def corpus_digest() -> str:
    """sha256 of the generated corpus, so a change to it changes the model's cache directory."""
    return hashlib.sha256("\n".join(corpus()).encode()).hexdigest()
