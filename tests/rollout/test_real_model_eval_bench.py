"""bench/real_model_eval.py: it runs end to end on the embedded model, its table agrees with the saved
episodes, its default env list is real, and a bad env id stops it before any model loads."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "bench" / "real_model_eval.py"
sys.path.insert(0, str(REPO / "bench"))

import real_model_eval  # noqa: E402

import envs  # noqa: E402


def _run(*args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(BENCH), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )


@pytest.mark.slow
def test_the_bench_runs_one_env_on_the_embedded_model_and_its_row_matches_the_saved_episode(tmp_path):
    saved = tmp_path / "traj.jsonl"
    out = _run(
        "--model",
        "embedded",
        "--n",
        "1",
        "--envs",
        "guess-number-v0",
        "--max-turns",
        "4",
        "--save",
        str(saved),
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "[1/1] guess-number-v0: success " in out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "| " + " | ".join(real_model_eval.COLUMNS) + " |"
    cells = [c.strip() for c in lines[2].strip("|").split("|")]
    assert cells[0] == "`guess-number-v0`"
    assert "total wall" in out.stdout
    records = [json.loads(line) for line in saved.read_text().splitlines()]
    assert len(records) == 1
    m = records[0]["metrics"]
    assert cells[1] == f"{int(bool(records[0]['success']))}/1"
    assert float(cells[2]) == round(m["total_reward"], 2)
    assert float(cells[3]) == round(m["format_errors"] + m["parse_errors"], 1)
    assert float(cells[4]) == m["num_turns"] and m["num_turns"] <= 4
    assert cells[5] == ("100%" if m["overflow"] else "0%")
    assert float(cells[6]) > 0
    assert records[0]["model"] == "embedded"


def test_the_default_envs_are_every_native_env_and_ten_textarena_games_all_registered():
    ids = real_model_eval.env_list(None)
    native = [s.id for s in envs.list_envs() if not s.category.startswith("textarena")]
    assert ids[: len(native)] == native and "guess-number-v0" in native and "search-qa-v0" in native
    picked = ids[len(native) :]
    assert len(picked) == 10 and len(set(picked)) == 10
    categories = [envs.spec(e).category for e in picked]
    assert categories.count("textarena-single-player") == 5 and categories.count("textarena-two-player") == 5
    assert real_model_eval.turn_cap("guess-number-v0", None) == real_model_eval.GAME_TURN_CAP
    assert real_model_eval.turn_cap("code-sandbox-v0", None) == real_model_eval.TURN_CAPS["code"]
    assert real_model_eval.turn_cap("code-sandbox-v0", 7) == 7


def test_an_unknown_env_id_is_one_line_before_any_model_loads():
    out = _run("--n", "1", "--envs", "guess-number-v0,gues-number-v0", timeout=120)
    assert out.returncode == 1
    last = out.stderr.strip().splitlines()
    assert len(last) == 1 and last[0].startswith("real_model_eval: env=gues-number-v0")
    assert "guess-number-v0" in last[0]  # the closest registered id is named
    assert "Loading weights" not in out.stderr and out.stdout == ""


def test_tools_a_template_leaves_out_are_flagged(tokenizer):
    assert not real_model_eval.tools_hidden("calculator-qa-v0", tokenizer)  # the embedded template shows them
    assert not real_model_eval.tools_hidden("textarena/Nim-v0", tokenizer)  # no tools to hide
    plain = copy.deepcopy(tokenizer)
    plain.chat_template = (
        "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    )
    assert real_model_eval.tools_hidden("calculator-qa-v0", plain)
    table = real_model_eval.markdown_table(
        [{"env": "calculator-qa-v0", "episodes": 0, "failed": 0, "wall_s": 1.0, "tools_hidden": True}]
    )
    assert "`calculator-qa-v0` †" in table and "renders none" in table
