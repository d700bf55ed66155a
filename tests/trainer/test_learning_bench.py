"""bench/learning.py: a run that fails before its first step ends with one line and the run's exit code."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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
