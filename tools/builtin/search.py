"""`search`: BM25 retrieval over a bundled fact corpus or a corpus file the user gives."""

from __future__ import annotations

import json
import math
import os
import re
from collections import Counter
from pathlib import Path

import pydantic

from tools.result import ToolResult
from tools.tool import Tool

DEFAULT_CORPUS = Path(__file__).resolve().parent.parent / "data" / "facts.jsonl"
_TOKEN = re.compile(r"\w+", re.UNICODE)
_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "has",
        "have",
        "in",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "that",
        "the",
        "this",
        "to",
        "was",
        "were",
        "what",
        "which",
        "who",
        "with",
    ]
)


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens without stop words."""
    return [t for t in _TOKEN.findall(text.lower()) if t not in _STOP]


def load_corpus(path: str | os.PathLike) -> list[dict]:
    """Documents from JSONL/JSON (`title`, `text`, optional `id`) or plain text (one document per line)."""
    path = Path(path)
    raw = path.read_text(encoding="utf-8")
    docs: list[dict] = []
    if path.suffix == ".json":
        items = json.loads(raw)
    elif path.suffix == ".jsonl":
        items = []
        for lineno, line in enumerate(raw.splitlines(), 1):
            if line.strip():
                try:
                    items.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise ValueError(f"{path}:{lineno}: invalid JSON ({exc.msg})") from None
    else:
        items = [{"text": line.strip()} for line in raw.splitlines() if line.strip()]
    for i, item in enumerate(items):
        if isinstance(item, str):
            item = {"text": item}
        if not isinstance(item, dict) or not isinstance(item.get("text", item.get("contents")), str):
            raise ValueError(f"{path}: document {i} has no `text` string")
        docs.append(
            {
                "id": str(item.get("id", i)),
                "title": str(item.get("title", "")),
                "text": item.get("text", item.get("contents")),
            }
        )
    return docs


class BM25:
    """Okapi BM25 (k1=1.5, b=0.75) over title + text."""

    def __init__(self, docs: list[dict], k1: float = 1.5, b: float = 0.75) -> None:
        self.docs, self.k1, self.b = docs, k1, b
        self.tfs = [Counter(tokenize(f"{d['title']} {d['text']}")) for d in docs]
        self.lengths = [sum(tf.values()) for tf in self.tfs]
        self.avg = sum(self.lengths) / max(len(docs), 1)
        df = Counter(term for tf in self.tfs for term in tf)
        n = len(docs)
        self.idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}

    def search(self, query: str, k: int = 3) -> list[tuple[float, dict]]:
        """Top-k (score, doc) with score > 0, best first; ties broken by corpus order."""
        terms = tokenize(query)
        scored = []
        for i, tf in enumerate(self.tfs):
            score = 0.0
            norm = self.k1 * (1 - self.b + self.b * self.lengths[i] / (self.avg or 1))
            for t in terms:
                f = tf.get(t)
                if f:
                    score += self.idf[t] * f * (self.k1 + 1) / (f + norm)
            if score > 0:
                scored.append((-score, i))
        scored.sort()
        return [(-s, self.docs[i]) for s, i in scored[:k]]


class Search(Tool):
    """Keyword search over a small document collection."""

    name = "search"
    description = "Search a collection of short factual documents by keywords and return the best matches."
    timeout_s = 10.0
    concurrent = True

    class Args(pydantic.BaseModel):
        model_config = pydantic.ConfigDict(extra="forbid")
        query: str = pydantic.Field(description="Keywords to look for.")
        k: int = pydantic.Field(3, ge=1, le=10, description="How many results to return.")

    def __init__(self, corpus: str | None = None, max_chars_per_doc: int = 600) -> None:
        self.corpus_path = str(corpus or DEFAULT_CORPUS)
        self.max_chars_per_doc = max_chars_per_doc
        self._index: BM25 | None = None

    @property
    def index(self) -> BM25:
        """The BM25 index, built on first use."""
        if self._index is None:
            self._index = BM25(load_corpus(self.corpus_path))
        return self._index

    async def run(self, args: Args, context: dict | None) -> ToolResult:
        hits = self.index.search(args.query, args.k)
        if not hits:
            return ToolResult(f"No documents match {args.query!r}.", metrics={"search_hits": 0.0})
        lines = []
        for rank, (_score, doc) in enumerate(hits, 1):
            text = doc["text"][: self.max_chars_per_doc]
            title = f"{doc['title']}: " if doc["title"] else ""
            lines.append(f"[{rank}] {title}{text}")
        return ToolResult("\n".join(lines), metrics={"search_hits": float(len(hits))})
