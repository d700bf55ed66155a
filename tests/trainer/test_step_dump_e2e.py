"""turngym.dump_every=N: the trainer writes every N-th step's episodes in rollout.view's format.

The fast test reads one sample the way the trainer hands it over; the slow one trains the embedded model
for two steps with `python -m trainer.run` and opens the dump with rollout.view.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from small_run_args import QUIET, SMALL_RUN

from rollout import view
from rollout.trajectory import Trajectory
from trainer.hooks.step_dump import dump_path, episode_record

REPO = Path(__file__).resolve().parents[2]


def test_a_sample_becomes_a_trajectory_line_with_turns_advantages_and_the_row():
    sample = {
        "prompts": [1, 2],
        "responses": [5, 6, 7, 8, 9],
        "response_mask": [1, 1, 0, 1, 1],
        "rollout_log_probs": [-0.1, -0.2, 0.0, -0.3, -0.4],
        "advantages": [0.5, 0.5, 0.0, 0.5, 0.5],
        "extra_fields": {
            "env_id": "guess-number-v0",
            "turn_scores": [0.0, 1.0],
            "turn_reward_positions": [1, 4],
            "turngym_termination": "terminated",
            "reward_extra_info": {"success": 1.0},
            "turngym_behaviour": {"followed": 1, "after_feedback": 1},
        },
        "extra_info": {"seed": 11, "env_kwargs": '{"difficulty": "easy"}'},
        "uid": "group-a",
    }
    line = json.loads(json.dumps(episode_record(sample, 3, "/tok", 6)))
    t = Trajectory.from_dict(line)
    assert [(x.start, x.end, x.reward) for x in t.turns] == [(0, 2, 0.0), (3, 5, 1.0)]
    assert t.seed == 11 and t.group == "group-a" and t.success is True and t.logprobs[3] == -0.3
    assert t.extra_fields["advantages"] == sample["advantages"] and t.metrics["behaviour"]["followed"] == 1
    assert line["env_kwargs"] == {"difficulty": "easy"} and line["max_turns"] == 6 and line["step"] == 3
    # A failed episode's placeholder keeps its error and no turns; log-probs of the wrong length are dropped.
    failed = episode_record(
        {
            **sample,
            "rollout_log_probs": [0.0],
            "extra_fields": {"turngym_failed": True, "turngym_error": "boom"},
        },
        3,
        None,
        None,
    )
    assert (
        failed["failed"] and failed["error"] == "boom" and failed["turns"] == [] and failed["logprobs"] == []
    )


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_dump_every_writes_the_steps_episodes_and_rollout_view_opens_them(tmp_path):
    out = tmp_path / "run"
    cmd = [
        sys.executable,
        "-m",
        "trainer.run",
        "env=guess-number",
        f"turngym.output_dir={out}",
        *SMALL_RUN,
        *QUIET,
        "trainer.total_training_steps=2",
        "turngym.dump_every=2",
    ]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=1100)
    log = proc.stdout[-4000:] + proc.stderr[-4000:]
    assert proc.returncode == 0, log
    assert not Path(dump_path(str(out), 1)).exists()  # every 2nd step only
    path = Path(dump_path(str(out), 2))
    assert f"[turngym] step 2's episodes: {path}" in proc.stdout, log
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert len(lines) == 8, log  # 4 prompts x rollout.n 2
    trajs = view.load_trajectories(str(path))
    for line, t in zip(lines, trajs, strict=True):
        assert line["step"] == 2 and Path(line["tokenizer"]).is_dir() and line["env_kwargs"] is not None
        assert t.env_id == "guess-number-v0" and isinstance(t.seed, int)
        n = len(t.response_ids)
        assert len(t.loss_mask) == n and len(t.logprobs) == n and len(t.extra_fields["advantages"]) == n
        assert all(lp == 0.0 for lp, m in zip(t.logprobs, t.loss_mask, strict=True) if not m)
        assert any(lp < 0.0 for lp in t.logprobs) and all(
            math.isfinite(a) for a in t.extra_fields["advantages"]
        )
        assert t.turns and all(t.loss_mask[x.end - 1] == 1 for x in t.turns)
    # GRPO: the two samples of a group share its seed; their advantages are equal and opposite or both 0.
    groups: dict[str, list[Trajectory]] = {}
    for t in trajs:
        groups.setdefault(str(t.group), []).append(t)
    assert len(groups) == 4 and all(len({t.seed for t in g}) == 1 for g in groups.values())
    html = tmp_path / "step_2.html"
    assert view.main([str(path), "-o", str(html)]) == 0
    page = html.read_text()
    assert page.count("class='ep'") == 8 and "per-turn advantages" in page and "title='logprob " in page
