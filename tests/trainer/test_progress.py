"""Progress line, metrics JSONL (truncated on resume), the reward-curve PNG, the console filter."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np

from trainer.report.plot import plot_reward_curve
from trainer.report.progress import (
    MetricsLog,
    episode_successes,
    episode_turns,
    progress_line,
    strip_ansi,
    turngym_message,
)

REPO = Path(__file__).resolve().parents[2]


def test_progress_line_has_the_promised_fields():
    line = progress_line(
        3,
        20,
        {
            "critic/score/mean": np.float32(0.5),
            "turngym/success_rate": 0.25,
            "turngym/turns": 3.0,
            "num_turns/mean": 7.0,  # verl counts every message; the line shows assistant turns
            "perf/total_num_tokens": 1520,
            "timing_s/step": 6.8,
        },
    )
    assert line == "step 3/20 | reward 0.500 | success 25.0% | turns 3.0 | tokens 1520 | 6.8 s/step"
    assert "n/a" in progress_line(1, 2, {})


def test_truncate_after_drops_redone_steps_and_torn_lines(tmp_path):
    log = MetricsLog(tmp_path / "m.jsonl")
    for step in range(1, 6):
        log.append(step, {"critic/score/mean": step / 10, "bad": object()})
    with log.path.open("a") as f:
        f.write('{"step": 6, "kind": "tr')  # killed mid-write
    assert log.truncate_after(3) == 3
    assert [r["step"] for r in log.records()] == [1, 2, 3]
    assert "bad" not in log.records()[0]


def test_reward_curve_png(tmp_path):
    log = MetricsLog(tmp_path / "m.jsonl")
    for step in range(1, 4):
        log.append(step, {"critic/score/mean": step / 10, "turngym/success_rate": 0.1})
    log.append(3, {"val-core/x/reward/mean@1": 0.3}, kind="val")
    png = plot_reward_curve(log.path, tmp_path / "curve.png")
    assert png is not None and png.read_bytes()[:4] == b"\x89PNG"
    assert plot_reward_curve(tmp_path / "missing.jsonl", tmp_path / "none.png") is None


def test_success_prefers_the_rollout_flag():
    fields = [{"reward_extra_info": {"success": 1.0}}, {"success": False}, None]
    assert episode_successes(fields, np.array([0.0, 2.0, 1.0]), 1.0).tolist() == [True, False, True]


def test_turns_are_assistant_turns_from_the_rollout():
    fields = [{"reward_extra_info": {"turns": 2.0}}, {"reward_extra_info": {"turns": 1.0}}, None, {}]
    assert episode_turns(fields) == [2.0, 1.0]


def test_turngym_lines_are_recognised_through_rays_prefix_and_colours():
    ray_line = "\x1b[36m(TurngymTaskRunner pid=8503)\x1b[0m [turngym] step 1/2 | reward 0.1\n"
    assert turngym_message(ray_line) == "[turngym] step 1/2 | reward 0.1\n"
    assert turngym_message("(pid=1, ip=10.0.0.2) [warm start] step 1/2: loss 7.9\n").startswith(
        "[warm start]"
    )
    assert turngym_message("(TurngymTaskRunner pid=1) step:1 - actor/entropy:8.0\n") is None
    assert turngym_message("WARNING target_num_threads 8 should not exceed 2\n") is None
    assert (
        strip_ansi("at \x1b[1m\x1b[32mhttp://127.0.0.1:8265 \x1b[39m\x1b[22m") == "at http://127.0.0.1:8265 "
    )


def _filtered_run(tmp_path, verbose: bool) -> tuple[str, str]:
    """A child process whose stdout is a pipe (not a terminal) runs noise through ConsoleFilter."""
    log = tmp_path / f"train-{verbose}.log"
    code = textwrap.dedent(
        f"""
        import os, subprocess, sys
        from trainer.report.progress import ConsoleFilter
        with ConsoleFilter({str(log)!r}, verbose={verbose}):
            print("[turngym] starting")
            print("\\x1b[36m(TurngymTaskRunner pid=7)\\x1b[0m step:1 - " + "x:1.0 - " * 500)
            print("\\x1b[36m(TurngymTaskRunner pid=7)\\x1b[0m [turngym] step 1/2 | turns 2.0")
            print("WARNING target_num_threads 8 should not exceed total physical CPU cores 2", file=sys.stderr)
            os.write(2, b"raw fd write from C code\\n")
            subprocess.run([sys.executable, "-c", "print('child process line')"])
        print("[turngym] after the filter")
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120, check=True
    )
    return out.stdout + out.stderr, log.read_text()


def test_console_shows_turngym_lines_and_the_log_keeps_everything_without_ansi(tmp_path):
    console, log = _filtered_run(tmp_path, verbose=False)
    assert console.splitlines() == [
        "[turngym] starting",
        "[turngym] step 1/2 | turns 2.0",
        "[turngym] after the filter",
    ]
    for text in (
        "step:1 - x:1.0",
        "target_num_threads",
        "raw fd write",
        "child process line",
        "[turngym] step 1/2",
    ):
        assert text in log
    assert "\x1b" not in log


def test_verbose_console_shows_everything_without_ansi_when_not_a_terminal(tmp_path):
    console, _ = _filtered_run(tmp_path, verbose=True)
    for text in ("step:1 - x:1.0", "target_num_threads", "raw fd write", "child process line"):
        assert text in console
    assert "\x1b" not in console
