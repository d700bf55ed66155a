"""Per-step progress: the one-line summary, the metrics JSONL (one object per step, truncated on resume)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

# verl metric names the progress line reads.
REWARD_KEY = "critic/score/mean"
TURNS_KEY = "num_turns/mean"
TOKENS_KEY = "perf/total_num_tokens"
STEP_TIME_KEY = "timing_s/step"
SUCCESS_KEY = "turngym/success_rate"


def _plain(value: Any) -> Any:
    """JSON-safe scalar (numpy/torch scalars -> Python, NaN -> None)."""
    if hasattr(value, "item") and callable(value.item):
        try:
            value = value.item()
        except (ValueError, RuntimeError):
            return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, int | float | str | bool) or value is None:
        return value
    return None


def progress_line(step: int, total: int, metrics: dict[str, Any]) -> str:
    """`step 3/20 | reward 0.412 | success 25.0% | turns 3.1 | tokens 1520 | 6.8 s/step` (+ val reward if any)."""

    def num(key: str, fmt: str) -> str:
        value = _plain(metrics.get(key))
        return "n/a" if value is None else format(value, fmt)

    success = _plain(metrics.get(SUCCESS_KEY))
    parts = [
        f"step {step}/{total}",
        f"reward {num(REWARD_KEY, '.3f')}",
        f"success {'n/a' if success is None else format(100 * success, '.1f') + '%'}",
        f"turns {num(TURNS_KEY, '.1f')}",
        f"tokens {num(TOKENS_KEY, '.0f')}",
        f"{num(STEP_TIME_KEY, '.1f')} s/step",
    ]
    val = [(k, v) for k, v in metrics.items() if k.startswith("val-core/") and "reward" in k]
    if val:
        mean = sum(_plain(v) or 0.0 for _, v in val) / len(val)
        parts.append(f"val reward {mean:.3f}")
    return " | ".join(parts)


class MetricsLog:
    """Append-only JSONL of {"step", "kind", **metrics}; `truncate_after(step)` drops steps a resume redoes."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def truncate_after(self, step: int) -> int:
        """Keep only records with step <= `step`; return how many were dropped."""
        if not self.path.exists():
            return 0
        kept, dropped = [], 0
        for line in self.path.read_text().splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                dropped += 1  # a line cut by a kill mid-write
                continue
            if record.get("step", 0) <= step:
                kept.append(line)
            else:
                dropped += 1
        self.path.write_text("".join(k + "\n" for k in kept))
        return dropped

    def append(self, step: int, metrics: dict[str, Any], kind: str = "train") -> None:
        """Write one record (only JSON-representable scalars)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        record = {"step": step, "kind": kind}
        record.update({k: v for k, v in ((k, _plain(v)) for k, v in metrics.items()) if v is not None})
        with self.path.open("a") as f:
            f.write(json.dumps(record) + "\n")

    def records(self, kind: str | None = None) -> list[dict[str, Any]]:
        """All records (optionally of one kind), in file order."""
        if not self.path.exists():
            return []
        out = []
        for line in self.path.read_text().splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if kind is None or record.get("kind") == kind:
                out.append(record)
        return out


def episode_successes(extra_fields: list[Any], scores: np.ndarray, threshold: float) -> np.ndarray:
    """Per-episode success: the rollout's ``success`` flag when it reports one, else score >= threshold."""
    out = np.asarray(scores, dtype=float) >= threshold
    for i, fields in enumerate(extra_fields):
        if not isinstance(fields, dict):
            continue
        flag = fields.get("success")
        if flag is None and isinstance(fields.get("reward_extra_info"), dict):
            flag = fields["reward_extra_info"].get("success")
        if flag is not None:
            out[i] = bool(flag)
    return out
