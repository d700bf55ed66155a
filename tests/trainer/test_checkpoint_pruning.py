"""Only the latest checkpoint keeps the optimizer state, through verl's `trainer.checkpoint_callback_class`."""

from __future__ import annotations

import pytest

from trainer.run_folder.checkpoint_pruning import MARKER, KeepOptimizerInLatest, drop_older_optimizer_states


def _checkpoint(root, step, roles=("actor", "critic")):
    folder = root / f"global_step_{step}"
    for role in roles:
        (folder / role).mkdir(parents=True)
        (folder / role / "model_world_size_2_rank_0.pt").write_bytes(b"m" * 100)
        for rank in (0, 1):
            (folder / role / f"optim_world_size_2_rank_{rank}.pt").write_bytes(b"o" * 200)
        (folder / role / "extra_state_world_size_2_rank_0.pt").write_bytes(b"e")
    (folder / "data.pt").write_bytes(b"d")
    return folder


def _optimizer_shards(folder):
    return sorted(p.name for p in folder.rglob("optim_world_size_*"))


def test_older_checkpoints_lose_only_their_optimizer_shards(tmp_path):
    old, older, latest = (_checkpoint(tmp_path, s) for s in (4, 2, 6))
    (tmp_path / "latest_checkpointed_iteration.txt").write_text("6")
    (tmp_path / "not_a_step").mkdir()
    (tmp_path / "not_a_step" / "optim_world_size_1_rank_0.pt").write_bytes(b"keep")
    assert drop_older_optimizer_states(tmp_path, latest) == 2 * 2 * 2 * 200
    assert len(_optimizer_shards(latest)) == 4
    for folder in (old, older):
        assert _optimizer_shards(folder) == []
        assert (folder / "actor" / "model_world_size_2_rank_0.pt").stat().st_size == 100
        assert (folder / "critic" / "extra_state_world_size_2_rank_0.pt").exists()
        assert (folder / "data.pt").exists()
        note = (folder / MARKER).read_text()
        assert "global_step_6" in note and "load_contents=[model,extra]" in note
    assert (tmp_path / "not_a_step" / "optim_world_size_1_rank_0.pt").exists()
    assert drop_older_optimizer_states(tmp_path, latest) == 0  # nothing left to drop
    assert drop_older_optimizer_states(tmp_path / "missing", latest) == 0
    # verl's rotation deletes an old checkpoint's actor folder and leaves data.pt: the note goes too.
    for role in ("actor", "critic"):
        for shard in (older / role).iterdir():
            shard.unlink()
        (older / role).rmdir()
    drop_older_optimizer_states(tmp_path, latest)
    assert sorted(p.name for p in older.iterdir()) == ["data.pt"]


def test_verl_builds_the_callback_from_turngyms_config_and_it_prunes_after_a_save(tmp_path, capsys):
    from verl.trainer.ppo.checkpoint_callback import build_checkpoint_callback

    from trainer.compose import compose_config

    cfg = compose_config(["env=guess-number", f"turngym.output_dir={tmp_path}"])
    callback = build_checkpoint_callback(cfg)
    assert isinstance(callback, KeepOptimizerInLatest)
    root = tmp_path / "checkpoints"
    first, second = _checkpoint(root, 1, ("actor",)), _checkpoint(root, 2, ("actor",))
    callback.on_save(trainer=None, global_step=2, checkpoint_dir=str(second), async_save=True)
    assert len(_optimizer_shards(first)) == 2  # the latest may still be in flight: nothing dropped
    callback.on_save(trainer=None, global_step=2, checkpoint_dir=str(second))
    assert _optimizer_shards(first) == [] and len(_optimizer_shards(second)) == 2
    assert "global_step_2: dropped 0 MB of older checkpoints' optimizer state" in capsys.readouterr().out

    keep_all = build_checkpoint_callback(compose_config(["env=guess-number", "turngym.keep_optimizer=all"]))
    third = _checkpoint(root, 3, ("actor",))
    keep_all.on_save(trainer=None, global_step=3, checkpoint_dir=str(third))
    assert len(_optimizer_shards(second)) == 2


def test_a_misspelt_choice_is_refused_before_the_run():
    from trainer.checks.config_error import ConfigError
    from trainer.compose import compose_config

    with pytest.raises(
        ConfigError, match="keep_optimizer='lates'; valid choices: latest, all; did you mean latest"
    ):
        compose_config(["env=guess-number", "turngym.keep_optimizer=lates"])
