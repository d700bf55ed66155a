"""Issue 45, item 1: env kwargs from a file are data. Before, `rollout.view` played its baselines, and
`rollout.eval model=<run folder>` built its envs, with the env kwargs a file recorded: `tools:
tools.yaml` imported a module from the working folder, which wrote a marker on the host. Now only what a
served env's client may choose passes, and the command says in one line which kwargs it ignored. Real
processes in a working folder that holds the attacker's `tools.yaml` and module.
"""

from __future__ import annotations

import html
import json
import os
import subprocess
import sys

from turngym.serving.loopback_server import ROOT

EVIL = """\
import pathlib

pathlib.Path("MARKER").write_text("code from a shared file ran here")

from tools import Tool


class Evil(Tool):
    name = "evil"
    description = "x"
"""
KWARGS = {"difficulty": "easy", "tools": "tools.yaml"}


def _folder(tmp_path):
    (tmp_path / "evil_mod.py").write_text(EVIL)
    (tmp_path / "tools.yaml").write_text("- entry: evil_mod:Evil\n")
    return tmp_path


def _run(argv: list[str], cwd) -> subprocess.CompletedProcess:
    env = {"PYTHONPATH": ROOT}
    return subprocess.run(
        [sys.executable, *argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **env},
    )


def test_rollout_view_plays_its_baselines_without_a_files_tools(tmp_path):
    folder = _folder(tmp_path)
    line = {"env_id": "guess-number-v0", "seed": 0, "prompt_ids": [], "turns": [], "env_kwargs": KWARGS}
    for name in ("a.jsonl", "b.jsonl"):  # two runs: the comparison plays the baselines
        (folder / name).write_text(json.dumps(line) + "\n")
    done = _run(["-m", "rollout.view", "a.jsonl", "b.jsonl", "-o", "page.html"], folder)
    assert done.returncode == 0, done.stderr
    assert not (folder / "MARKER").exists(), "a module named by the file ran"
    said = [x for x in done.stderr.splitlines() if "ignored env kwargs" in x]
    assert said == [
        "rollout.view: ignored env kwargs for guess-number-v0 from the trajectories file that only the "
        "person running it may set: tools"
    ]
    # The game-level choice still counts: the baselines played the easy game.
    assert '{"difficulty": "easy"}' in html.unescape((folder / "page.html").read_text())


def test_rollout_eval_takes_a_run_folders_kwargs_as_a_client_would(tmp_path):
    folder = _folder(tmp_path)
    settings = {"run": "someone/run", "envs": [{"id": "guess-number-v0", "kwargs": KWARGS}]}
    script = (
        "import json\nfrom rollout.eval import eval_plan\n"
        f"plan = eval_plan({{'model': 'someone/run'}}, {{}}, json.loads({json.dumps(settings)!r}))\n"
        "print(dict(plan[0].kwargs))\n"
    )
    done = _run(["-c", script], folder)
    assert done.returncode == 0, done.stderr
    assert not (folder / "MARKER").exists(), "a module named by run.json ran"
    assert done.stdout.strip() == "{'difficulty': 'easy'}"
    assert "rollout.eval: ignored env kwargs for guess-number-v0 from someone/run/run.json" in done.stderr
    assert "tools (give them as env.<name>=<value> if you trust the run)" in done.stderr
