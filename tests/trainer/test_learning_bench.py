"""bench/learning.py: a run that fails before its first step ends with one line and the run's exit code."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def test_a_run_that_fails_at_its_config_check_is_one_line_not_a_traceback(tmp_path):
    out = subprocess.run(
        [
            sys.executable,
            "bench/learning.py",
            "--out",
            str(tmp_path / "run"),
            "--",
            "algorithm=no-such-algorithm",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    assert out.returncode == 2, out.stderr[-2000:]
    assert "unknown algorithm 'no-such-algorithm'" in out.stderr
    assert "before its first step" in out.stderr and "Traceback" not in out.stderr


def _bench():
    import importlib.util

    spec = importlib.util.spec_from_file_location("learning_bench", REPO / "bench" / "learning.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_wilson_interval_matches_the_textbook_values():
    bench = _bench()
    # 50 of 100: 0.4038-0.5962; 0 of 10: 0-0.2775 (the score interval computed by hand).
    assert bench.wilson_interval(0.5, 100) == pytest.approx((0.4038, 0.5962), abs=1e-4)
    assert bench.wilson_interval(0.0, 10) == pytest.approx((0.0, 0.2775), abs=1e-4)


def test_noise_verdict_on_64_episodes():
    bench = _bench()
    assert not bench.beyond_noise(0.203, 0.297, 64)  # +9.4 points: within
    assert bench.beyond_noise(0.203, 0.453, 64)  # +25 points: beyond
    assert not bench.beyond_noise(0.0, 0.0, 64)
