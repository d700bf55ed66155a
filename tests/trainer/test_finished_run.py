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
