"""turngym.engines.checkpoint_export: every path a run leaves resolves to its actor; exports are cached.

The merge itself is verl's model merger on a real FSDP checkpoint; the end-to-end training test's
run folder exercises it (tests/trainer), and here the layout rules and the cache are checked.
"""

from __future__ import annotations

import json
import shutil

import pytest

from turngym.engines.checkpoint_export import (
    COMPLETE,
    EXPORT_DIR,
    CheckpointError,
    actor_dir,
    export_stamp,
    export_target,
    is_hf_model_dir,
    resolve_model,
    run_dir,
)


def _run(tmp_path, step: int = 4):
    actor = tmp_path / "checkpoints" / f"global_step_{step}" / "actor"
    (actor / "huggingface").mkdir(parents=True)
    (actor / "huggingface" / "config.json").write_text("{}")
    (actor / "model_world_size_1_rank_0.pt").write_bytes(b"")
    (tmp_path / "checkpoints" / "latest_checkpointed_iteration.txt").write_text(str(step))
    (tmp_path / "run.json").write_text("{}")
    return actor


def test_every_path_of_a_run_leads_to_the_latest_actor(tmp_path):
    actor = _run(tmp_path)
    for path in (tmp_path, tmp_path / "checkpoints", actor.parent, actor, actor / "huggingface"):
        assert actor_dir(path) == actor, path
        assert run_dir(path) == tmp_path
    assert actor_dir(tmp_path / "checkpoints" / "global_step_4" / "actor" / "huggingface" / "x") is None


def test_a_model_dir_is_used_as_is_and_an_export_is_reused(tmp_path, model_path):
    assert is_hf_model_dir(model_path) and resolve_model(model_path) == model_path
    actor = _run(tmp_path / "run")
    cached = tmp_path / "run" / "export" / "global_step_4"
    assert export_target(actor) == cached
    shutil.copytree(model_path, cached)
    (cached / COMPLETE).write_text(json.dumps(export_stamp(actor)))
    assert resolve_model(tmp_path / "run") == cached  # no merge: verl's merger would fail on empty shards
    (actor / "model_world_size_1_rank_0.pt").write_bytes(b"new weights")  # the step was trained again
    with pytest.raises(CheckpointError, match="model merger failed"):
        resolve_model(tmp_path / "run")
    loose = tmp_path / "elsewhere" / "global_step_1" / "actor"
    loose.mkdir(parents=True)
    assert export_target(loose) == loose.parent / EXPORT_DIR


def test_paths_that_are_not_models_say_so(tmp_path):
    with pytest.raises(CheckpointError, match="does not exist"):
        resolve_model(tmp_path / "nope")
    with pytest.raises(CheckpointError, match="neither a Hugging Face model directory"):
        resolve_model(tmp_path)
    actor = _run(tmp_path / "run")
    with pytest.raises(CheckpointError, match="model merger failed"):
        resolve_model(actor)  # empty shards: the merger's own error, in one line
