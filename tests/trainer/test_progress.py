"""Progress line, metrics JSONL (truncated on resume) and the reward-curve PNG."""

from __future__ import annotations

import numpy as np

from trainer.plot import plot_reward_curve
from trainer.progress import MetricsLog, episode_successes, progress_line


def test_progress_line_has_the_promised_fields():
    line = progress_line(
        3,
        20,
        {
            "critic/score/mean": np.float32(0.5),
            "turngym/success_rate": 0.25,
            "num_turns/mean": 3.0,
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
