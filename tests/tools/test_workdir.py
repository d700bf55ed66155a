"""Work dirs: a dir whose creating process died before its teardown is swept; a live one is kept."""

from __future__ import annotations

import os
import subprocess
import sys

from tools.sandbox.workdir import make_workdir, remove_workdir, sweep_stale_workdirs

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_a_dead_process_work_dir_is_swept_and_a_live_one_kept(tmp_path):
    size = 8 if os.geteuid() == 0 else None  # as root a mounted tmpfs, as the sandbox makes it
    # A process that makes a work dir and dies without removing it (as when it is SIGKILLed).
    made = subprocess.run(
        [
            sys.executable,
            "-c",
            "import os, sys; from tools.sandbox.workdir import make_workdir; "
            f"print(make_workdir(None, sys.argv[1], {size})); sys.stdout.flush(); os._exit(0)",
            str(tmp_path),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    dead = made.stdout.strip()
    live = make_workdir(None, str(tmp_path), size)
    older = tmp_path / "turngym-sbx-12_abcde"  # an older version's name carries no pid: left alone
    older.mkdir()
    try:
        assert os.path.isdir(dead) and os.path.basename(dead).startswith("turngym-sbx-p")
        assert sweep_stale_workdirs(str(tmp_path)) == 1
        assert not os.path.exists(dead)
        assert os.path.isdir(live) and older.is_dir()
    finally:
        remove_workdir(live)
