"""What a training run shows: the one-line summary per step, the metrics JSONL (one object per step,
truncated on resume), and the console filter that keeps verl's and Ray's output in a log file."""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import sys
import threading
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from rollout.episode_result import EpisodeResult
from trainer.report.validation_reward import validation_rewards
from trainer.run_folder.files import append_run_file, read_run_file, write_run_file

# verl metric names the progress line reads.
REWARD_KEY = "critic/score/mean"
# Assistant turns per episode (the rollout's `turns`, as validation reports it); verl's
# `num_turns/mean` counts every message of the conversation.
TURNS_KEY = "turngym/turns"
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


# Health metrics (trainer/hooks/health/metrics.py) the progress line shows, as (metric key, label, percent?); a
# metric shows when the step measured it, the last three only when they are not 0.
HEALTH_SHOWN = (
    ("health/groups_all_equal", "flat groups", True),
    ("health/format_error_rate", "format errors", True),
    ("health/valid_tool_call_rate", "valid tool calls", True),
    ("health/episodes_cut", "cut", True),
    ("health/entropy", "entropy", False),
)
HEALTH_SHOWN_NONZERO = (
    ("health/episodes_failed", "failed", True),
    ("health/nonfinite_rewards", "non-finite rewards", False),
    ("health/nonfinite_advantages", "non-finite advantages", False),
)


def health_parts(metrics: dict[str, Any]) -> list[str]:
    """The progress line's health segments: `flat groups 50%`, `format errors 12%`, ..."""
    parts = []
    for key, label, percent in HEALTH_SHOWN + HEALTH_SHOWN_NONZERO:
        if key not in metrics:
            continue
        value = metrics[key]
        value = float(value.item() if hasattr(value, "item") else value)
        if (key, label, percent) in HEALTH_SHOWN_NONZERO and value == 0:
            continue
        shown = f"{100 * value:.0f}%" if percent and math.isfinite(value) else f"{value:.3g}"
        parts.append(f"{label} {shown}")
    return parts


def progress_line(step: int, total: int, metrics: dict[str, Any]) -> str:
    """`step 3/20 | reward 0.412 | success 25.0% | turns 3.1 | tokens 1520 | 6.8 s/step | flat groups 50% | ...`
    (+ val reward if any; the health segments are `health_parts`)."""

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
    val = validation_rewards(metrics)  # sampled and greedy play apart, never averaged together
    if val:
        parts.append("val reward " + ", ".join(f"{way} {mean:.3f}" for way, (mean, _) in val.items()))
    parts += health_parts(metrics)
    return " | ".join(parts)


class MetricsLog:
    """Append-only JSONL of {"step", "kind", **metrics}; `truncate_after(step)` drops steps a resume redoes.

    The file is a run-folder file (``trainer/run_folder/files.py``): never written through a link, never opened
    if it is a FIFO; either raises ``RunFileError`` in one line.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def truncate_after(self, step: int) -> int:
        """Keep only records with step <= `step`; return how many were dropped."""
        text = read_run_file(self.path)
        if text is None:
            return 0
        kept, dropped = [], 0
        for line in text.splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                dropped += 1  # a line cut by a kill mid-write
                continue
            if record.get("step", 0) <= step:
                kept.append(line)
            else:
                dropped += 1
        write_run_file(self.path, "".join(k + "\n" for k in kept))
        return dropped

    def append(self, step: int, metrics: dict[str, Any], kind: str = "train") -> None:
        """Write one record (only JSON-representable scalars)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        record = {"step": step, "kind": kind}
        record.update({k: v for k, v in ((k, _plain(v)) for k, v in metrics.items()) if v is not None})
        append_run_file(self.path, json.dumps(record) + "\n")

    def records(self, kind: str | None = None) -> list[dict[str, Any]]:
        """All records (optionally of one kind), in file order."""
        text = read_run_file(self.path)
        if text is None:
            return []
        out = []
        for line in text.splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if kind is None or record.get("kind") == kind:
                out.append(record)
        return out


def episode_successes(extra_fields: list[Any], scores: np.ndarray, threshold: float) -> np.ndarray:
    """Per-episode success: the rollout's success flag (`EpisodeResult.success`) when it reports one,
    else score >= threshold."""
    out = np.asarray(scores, dtype=float) >= threshold
    for i, fields in enumerate(extra_fields):
        flag = EpisodeResult.from_extra_fields(fields).success
        if flag is not None:
            out[i] = flag
    return out


def episode_turns(extra_fields: list[Any]) -> list[float]:
    """Assistant turns of each episode that reports them (`EpisodeResult.assistant_turns`)."""
    turns = (EpisodeResult.from_extra_fields(fields).assistant_turns for fields in extra_fields)
    return [float(t) for t in turns if t is not None]


# Colour and cursor escapes (Ray's coloured prefixes, its dashboard banner, tqdm).
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# Ray's prefix on a line forwarded from a worker: "(TurngymTaskRunner pid=123, ip=...) ".
RAY_PREFIX = re.compile(r"^\((?:[\w.:-]+ )?pid=[^)]*\) ")
RAY_DEDUP_SUFFIX = re.compile(r" \[repeated \d+x across cluster\]")
CONSOLE_TAGS = ("[turngym]", "[warm start]")


def validation_start_line(step: int, episodes: int | None) -> str:
    """The line printed when a validation pass starts: it can take minutes with a real model."""
    count = f"{episodes} episodes" if episodes is not None else "the validation episodes"
    return f"[turngym] validation at step {step}: playing {count}"


def validation_done_line(step: int, episodes: int | None, seconds: float, metrics: dict[str, Any]) -> str:
    """The line printed when a validation pass ends: episodes, time and the ``val-core/`` metrics."""
    shown = ", ".join(f"{k}={float(v):.3f}" for k, v in metrics.items() if k.startswith("val-core/"))
    count = f"{episodes} episodes in " if episodes is not None else ""
    return f"[turngym] validation at step {step} done: {count}{seconds:.0f} s" + (
        f"; {shown}" if shown else ""
    )


# A live line: a console tag, then LIVE_MARK (`[turngym] ~ step 3/20 episodes: 17/64 finished, 45 s`). On a
# terminal each rewrites the previous one of the same phase (the text before the first ": ") in place.
LIVE_MARK = " ~ "
_CLEAR_LINE = "\r\x1b[K"


def live_key(message: str) -> str | None:
    """The phase a live line belongs to (its text before the first ": "), or None for any other line.

    >>> live_key("[warm start] ~ training: 12/192 steps"), live_key("[turngym] step 3/20 | reward 0.4")
    ('[warm start] ~ training', None)
    """
    for tag in CONSOLE_TAGS:
        if message.startswith(tag + LIVE_MARK):
            return message.split(": ", 1)[0]
    return None


def strip_ansi(text: str) -> str:
    """``text`` without terminal escape sequences."""
    return ANSI_ESCAPE.sub("", text)


def turngym_message(line: str) -> str | None:
    """The message of one of turngym's own lines (Ray's worker prefix removed), else None."""
    plain = RAY_PREFIX.sub("", strip_ansi(line).lstrip("\r"), count=1)
    if plain.startswith(CONSOLE_TAGS):
        return RAY_DEDUP_SUFFIX.sub("", plain)
    return None


class ConsoleFilter:
    """Everything this process and its children write to stdout/stderr goes to ``log_path`` (no ANSI
    codes); the console shows only turngym's lines, or everything when ``verbose``.

    Works on file descriptors, so it also catches what Ray forwards from workers, C++ logging and
    child processes. Console output keeps its escapes only when the console is a terminal.
    """

    def __init__(self, log_path: str | Path, verbose: bool = False) -> None:
        self.log_path = Path(log_path)
        self.verbose = verbose
        self._lock = threading.Lock()
        self._log: BinaryIO | None = None
        self._saved: dict[int, int] = {}
        self._pumps: list[threading.Thread] = []
        self._live: str | None = None  # the phase whose live line the terminal shows unfinished

    def __enter__(self) -> ConsoleFilter:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = self.log_path.open("ab")
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        for fd in (1, 2):
            console = os.dup(fd)
            self._saved[fd] = console
            read_end, write_end = os.pipe()
            os.dup2(write_end, fd)
            os.close(write_end)
            pump = threading.Thread(
                target=self._pump, args=(read_end, console, os.isatty(console)), daemon=True
            )
            pump.start()
            self._pumps.append(pump)
        with contextlib.suppress(Exception):  # a pipe would otherwise hold lines back in blocks
            sys.stdout.reconfigure(line_buffering=True)
        return self

    def __exit__(self, *exc: Any) -> None:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        for fd, console in self._saved.items():
            os.dup2(console, fd)  # drops this process's write end of the pipe
        for pump in self._pumps:
            # Child processes (Ray's daemons) may still hold the pipe open: do not wait on them.
            pump.join(timeout=5)
        with self._lock:
            if self._live is not None and self._saved:  # end a live line left open
                with contextlib.suppress(OSError):
                    os.write(next(iter(self._saved.values())), b"\n")
                self._live = None
        for console in self._saved.values():
            os.close(console)
        self._saved.clear()
        with self._lock:
            if self._log is not None:
                self._log.close()
                self._log = None

    def _pump(self, read_end: int, console: int, tty: bool) -> None:
        with open(read_end, "rb", buffering=0) as pipe:
            for raw in iter(pipe.readline, b""):
                try:
                    text = raw.decode("utf-8", errors="replace")
                    plain = strip_ansi(text)
                    with self._lock:
                        if self._log is not None:
                            self._log.write(plain.encode())
                            self._log.flush()
                    shown = (text if tty else plain) if self.verbose else turngym_message(plain)
                    if shown and tty and not self.verbose:
                        shown = self._in_place(shown)
                    if shown:
                        data = shown.encode()
                        while data:
                            data = data[os.write(console, data) :]
                except Exception:  # noqa: BLE001 - the pump must keep draining or writers block
                    continue

    def _in_place(self, message: str) -> str:
        """What a terminal gets for `message`: a live line rewrites the open one of its phase."""
        key = live_key(message)
        with self._lock:
            if key is not None:
                prefix = _CLEAR_LINE if self._live == key else ("\n" if self._live else "")
                self._live = key
                return prefix + message.rstrip("\n")
            prefix = "\n" if self._live else ""
            self._live = None
            return prefix + message
