"""search-qa-v0: questions answered from the bundled fact corpus with `search` (and `calculator` on hard)."""

from __future__ import annotations

import json
import re
import unicodedata
from functools import cache
from pathlib import Path
from typing import Any

from envs.tool_use.tool_qa import Question, ToolQAEnv, numbers_match

QUESTIONS = Path(__file__).parent / "data" / "search_qa.jsonl"


@cache
def bundled_questions() -> tuple[dict[str, Any], ...]:
    """The bundled questions: `question`, `answer`, `tier`, the `searches` that find the facts and,
    for multi-step ones, the `expression` that combines them."""
    return tuple(json.loads(line) for line in QUESTIONS.read_text().splitlines() if line.strip())


class SearchQAEnv(ToolQAEnv):
    """`easy`: one fact to look up. `hard`: two or three facts to look up and combine with arithmetic.
    Tools: `search` (BM25 over the bundled corpus of `tools`), `calculator`, `submit`."""

    tool_names = ("search", "calculator")
    difficulties = ("easy", "hard")
    reset_options = {"difficulty": ("easy", "hard"), "question_id": str}

    def make_question(self, difficulty: str, options: dict[str, Any]) -> Question:
        """A bundled question of the tier (`options={"question_id": ...}` picks one)."""
        pool = [q for q in bundled_questions() if q["tier"] == difficulty]
        if "question_id" in options:
            wanted = options.pop("question_id")
            pool = [q for q in bundled_questions() if q["id"] == wanted]
            if not pool:
                raise ValueError(f"SearchQAEnv: no question with id {wanted!r}")
        q = pool[int(self.np_random.integers(len(pool)))]
        calls: list[tuple[str, dict[str, Any]]] = [("search", {"query": s}) for s in q["searches"]]
        if "expression" in q:
            calls.append(("calculator", {"expression": q["expression"]}))
        return Question(q["question"], q["answer"], calls, q["id"], tuple(q.get("aliases", ())))

    def is_correct(self, given: str, expected: str) -> bool:
        """Numbers compare exactly; a name must be the whole answer (case, accents, punctuation and a
        leading "the" aside): finding it inside the answer would pay a list of fifty names, or "not X"."""
        if re.fullmatch(r"-?[\d.,]+", expected.strip()):
            return numbers_match(given, expected)
        return _norm(given) == _norm(expected)


def _norm(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    plain = "".join(c for c in decomposed if not unicodedata.combining(c)).lower()
    words = re.sub(r"[\W_]+", " ", plain).split()
    if len(words) > 1 and words[0] in ("the", "a", "an"):
        words = words[1:]
    return " ".join(words)
