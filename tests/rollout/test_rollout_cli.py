"""rollout.eval and rollout.view end to end (HFEngine in-process, SGLangEngine against rollout.serve)."""

import pytest

from rollout import eval as rollout_eval
from rollout import view
from rollout.trajectory import load_jsonl


def test_eval_hf_saves_and_view_renders(tmp_path, capsys, model_path):
    out = tmp_path / "traj.jsonl"
    summary = rollout_eval.main(
        [
            "env=guess-number-v0",
            "engine=hf",
            "n=3",
            "group=3",
            f"model={model_path}",
            "env.difficulty=easy",
            "max_new_tokens=8",
            "max_response_tokens=120",
            "--save",
            str(out),
        ]
    )
    printed = capsys.readouterr().out
    assert "reward_mean" in printed and "generated_tokens_per_s" in printed
    assert summary["episodes"] == 3
    trajs = load_jsonl(str(out))
    assert len(trajs) == 3 and len({t.group for t in trajs}) == 1
    html_path = tmp_path / "traj.html"
    view.main([str(out), "-o", str(html_path), "--tokenizer", str(model_path)])
    page = html_path.read_text()
    assert (
        page.count("class='ep'") == 3 and "class='g'" in page and "class='e'" in page and "class='r'" in page
    )


def test_eval_sglang_engine_against_server(served_url, capsys):
    summary = rollout_eval.main(
        [
            "env=guess-number-v0",
            "engine=sglang",
            f"url={served_url}",
            "n=2",
            "max_new_tokens=8",
            "max_response_tokens=80",
        ]
    )
    assert summary["episodes"] == 2 and summary["failed_episodes"] == 0


def test_eval_usage_errors():
    with pytest.raises(SystemExit, match="env=<id> is required"):
        rollout_eval.parse_args(["n=3"])
    opts, env_kwargs, save = rollout_eval.parse_args(
        ["env=x", "n=3", "env.difficulty=easy", "--save=a.jsonl"]
    )
    assert opts == {"env": "x", "n": 3} and env_kwargs == {"difficulty": "easy"} and save == "a.jsonl"
