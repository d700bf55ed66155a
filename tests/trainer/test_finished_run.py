"""Running the same training command again after it finished does not start Ray or train again."""

from __future__ import annotations


def test_finished_run_is_reported_not_repeated(tmp_path, capsys, run_trainer):
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "checkpoints" / "latest_checkpointed_iteration.txt").write_text("3")
    code = run_trainer(
        [
            "env.id=guess-number-v0",
            "trainer.total_training_steps=3",
            "env.train_episodes=4",
            "env.val_episodes=2",
            f"turngym.output_dir={tmp_path}",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "already holds a finished run (3 steps)" in out
    assert "skipping warm start" in out and not (tmp_path / "warm_start").exists()


def test_another_algorithm_in_a_finished_runs_folder_is_refused_before_anything_changes(
    tmp_path, capsys, run_trainer
):
    from trainer.checks.run_checks import write_run_record
    from trainer.compose import compose_config

    common = [
        "env.id=guess-number-v0",
        "env.train_episodes=4",
        "env.val_episodes=2",
        f"turngym.output_dir={tmp_path}",
    ]
    write_run_record(compose_config(common + ["trainer.device=cpu"]))
    step = tmp_path / "checkpoints" / "global_step_16" / "actor"
    step.mkdir(parents=True)
    (tmp_path / "checkpoints" / "latest_checkpointed_iteration.txt").write_text("16")
    before = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*")}
    code = run_trainer(common + ["algorithm=ppo", "trainer.total_training_steps=2"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert "algorithm.adv_estimator grpo -> gae" in err[0] and "turngym.output_dir=" in err[0]
    assert {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*")} == before
