"""rollout.eval and rollout.view end to end (HFEngine in-process, SGLangEngine against turngym.engines.serve)."""

import json

import pytest

from rollout import eval as rollout_eval
from rollout import view
from rollout.episode_kind import EpisodeKind
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
    first = json.loads(out.read_text().splitlines()[0])
    assert first["tokenizer"] == str(model_path) and first["model"] == str(model_path)
    assert view.recorded_tokenizer(str(out)) == str(model_path)
    html_path = tmp_path / "traj.html"
    view.main([str(out), "-o", str(html_path)])  # decodes with the tokenizer the file records
    page = html_path.read_text()
    assert (
        page.count("class='ep'") == 3 and "class='g'" in page and "class='e'" in page and "class='r'" in page
    )
    # The summary names the env with the kwargs the file records (rollout.eval --save writes them).
    assert (
        "<h2>Summary</h2>" in page
        and "<td>guess-number-v0 {&quot;difficulty&quot;: &quot;easy&quot;}</td>" in page
    )
    assert all(f"href='#ep{k}'" in page and f"id='ep{k}'" in page for k in range(3))
    assert "[" not in page.split("<div class='toks'>")[1][:40]  # real token text, not [id] placeholders


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
    with pytest.raises(rollout_eval.UsageError, match="env=<id> is required"):
        rollout_eval.parse_args(["n=3"])
    with pytest.raises(rollout_eval.UsageError, match="did you mean temperature"):
        rollout_eval.parse_args(["env=x", "temprature=0.5"])
    with pytest.raises(rollout_eval.UsageError, match="not an integer"):
        rollout_eval.parse_args(["env=x", "n=many"])
    with pytest.raises(rollout_eval.UsageError, match="out of range"):
        rollout_eval.parse_args(["env=x", "top_p=0"])
    opts, env_kwargs, save = rollout_eval.parse_args(
        ["env=x", "n=3", "env.difficulty=easy", "--save=a.jsonl"]
    )
    assert opts == {"env": "x", "n": 3} and env_kwargs == {"difficulty": "easy"} and save == "a.jsonl"


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["env=guess-numbr-v0"], "Did you mean 'guess-number-v0'"),
        (["env=guess-number-v0", "temprature=0.5"], "did you mean temperature?"),
        (["env=guess-number-v0", "env.difficulty=impossible"], "unknown difficulty"),
        (["env=guess-number-v0", "model=/nonexistent"], "does not exist"),
        (["env=countdown-v0", "--import", "no_such_module_xyz"], "--import no_such_module_xyz"),
    ],
)
def test_bad_eval_input_exits_2_in_one_line_before_loading_a_model(argv, needle, capsys, monkeypatch):
    import turngym.engines.hf_engine

    def refuse(*_a, **_k):
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(turngym.engines.hf_engine, "HFEngine", refuse)
    assert rollout_eval.cli(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0] and err[0].startswith("rollout.eval: ")


def test_eval_defaults_are_trainings_budgets():
    from trainer.compose import compose_config

    for overrides, embedded in (([], True), (["model=/models/x"], False)):
        cfg = compose_config(["env=text-game", "trainer.device=cpu", *overrides])
        defaults = rollout_eval.training_defaults(embedded=embedded)
        assert defaults["max_response_tokens"] == cfg.data.max_response_length
        assert defaults["max_turns"] == cfg.actor_rollout_ref.rollout.multi_turn.max_assistant_turns
        assert defaults.get("max_new_tokens") == cfg.turngym.get("max_tokens_per_turn")


def test_eval_reads_a_runs_envs_and_budgets(tmp_path):
    (tmp_path / "run.json").write_text(
        json.dumps({"env": [{"id": "guess-number-v0", "weight": 1.0, "kwargs": {"difficulty": "hard"}}]})
    )
    (tmp_path / "config.yaml").write_text(
        "data:\n  max_response_length: 128\nactor_rollout_ref:\n  rollout:\n    multi_turn:\n"
        "      max_assistant_turns: 5\n"
    )
    step = tmp_path / "checkpoints" / "global_step_2" / "actor"
    step.mkdir(parents=True)
    settings = rollout_eval.run_settings(str(step))
    assert settings["max_response_tokens"] == 128 and settings["max_turns"] == 5
    plan = rollout_eval.eval_plan({"model": str(step)}, {"max_turns": 3}, settings)
    assert plan == [EpisodeKind("guess-number-v0", {"difficulty": "hard", "max_turns": 3})]


def test_view_marks_budget_ended_episodes_as_unsuccessful():
    from rollout.trajectory import Trajectory
    from rollout.view import summary_html

    won = Trajectory(prompt_ids=[1], env_id="g", seed=0, termination="terminated", success=True)
    cut = Trajectory(prompt_ids=[1], env_id="g", seed=1, termination="budget", success=None)
    unjudged = Trajectory(prompt_ids=[1], env_id="g", seed=2, termination="terminated", success=None)
    page = summary_html([won, cut, unjudged])
    assert page.count("class='fail'") == 1 and "class='fail' href='#ep1'" in page
    assert "<td>0.50</td>" in page  # the cut-off episode counts as a failure in the success rate
