"""Dataset rows from env ids and seeds: verl RLHFDataset layout, disjoint train/val seeds."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from trainer.data.datasets import AGENT_NAME, assign_envs, write_datasets

MIX = [
    {"id": "guess-number-v0", "weight": 3.0, "kwargs": {"difficulty": "easy"}},
    {"id": "maze-v0", "weight": 1.0, "kwargs": {}},
]


def test_rows_layout_and_disjoint_seeds(tmp_path):
    train, val = write_datasets(MIX, tmp_path / "t.parquet", tmp_path / "v.parquet", 16, 4, 0, 1000)
    tr, va = pd.read_parquet(train), pd.read_parquet(val)
    assert len(tr) == 16 and len(va) == 4
    row = tr.iloc[0]
    assert row["agent_name"] == AGENT_NAME
    assert set(row["extra_info"]) >= {"env_id", "seed", "env_kwargs", "index"}
    assert row["data_source"] == row["extra_info"]["env_id"]
    assert isinstance(json.loads(row["extra_info"]["env_kwargs"]), dict)
    assert list(row["prompt"])[0]["role"] in ("system", "user")
    train_seeds = {r["seed"] for r in tr["extra_info"]}
    val_seeds = {r["seed"] for r in va["extra_info"]}
    assert not train_seeds & val_seeds and len(train_seeds) == 16


def test_kwargs_survive_parquet(tmp_path):
    train, _ = write_datasets(MIX, tmp_path / "t.parquet", tmp_path / "v.parquet", 8, 2, 0, 1000)
    for info in pd.read_parquet(train)["extra_info"]:
        kwargs = json.loads(info["env_kwargs"])
        assert kwargs == ({"difficulty": "easy"} if info["env_id"] == "guess-number-v0" else {})


def test_weights_are_respected_and_reproducible():
    picks = [e["id"] for e in assign_envs(MIX, 400, seed=1)]
    assert picks == [e["id"] for e in assign_envs(MIX, 400, seed=1)]
    assert picks.count("guess-number-v0") == 300


def test_overlapping_seed_ranges_are_refused(tmp_path):
    with pytest.raises(ValueError, match="overlap"):
        write_datasets(MIX, tmp_path / "t.parquet", tmp_path / "v.parquet", 100, 10, 0, 50)


def test_greedy_copies_of_validation_seeds(tmp_path):
    _, val = write_datasets(
        MIX, tmp_path / "t.parquet", tmp_path / "v.parquet", 8, 4, 0, 1000, val_greedy=True
    )
    va = pd.read_parquet(val)
    assert len(va) == 8
    sampled, greedy = va.iloc[:4], va.iloc[4:]
    assert sampled["turngym_temperature"].isna().all() and (greedy["turngym_temperature"] == 0.0).all()
    assert list(greedy["data_source"]) == [s + "@greedy" for s in sampled["data_source"]]
    assert [r["seed"] for r in greedy["extra_info"]] == [r["seed"] for r in sampled["extra_info"]]
    _, plain = write_datasets(MIX, tmp_path / "t2.parquet", tmp_path / "v2.parquet", 8, 4, 0, 1000)
    assert "turngym_temperature" not in pd.read_parquet(plain).columns


def test_validation_rows_seed_their_sampling_and_training_rows_do_not(tmp_path):
    train, val = write_datasets(
        MIX, tmp_path / "t.parquet", tmp_path / "v.parquet", 8, 4, 0, 1000, val_greedy=True
    )
    va, tr = pd.read_parquet(val), pd.read_parquet(train)
    assert list(va["turngym_sampling_seed"]) == [r["seed"] for r in va["extra_info"]]
    assert "turngym_sampling_seed" not in tr.columns  # GRPO's samples of one seed must differ


def test_validation_episodes_are_built_as_episode_rows_and_written_once(tmp_path):
    from rollout.episode_row import EpisodeRow
    from trainer.data.datasets import for_validation, mixture_episodes

    episodes = for_validation(mixture_episodes(MIX, 4, 1000, "val"), greedy=True)
    assert [e.sampling_seed for e in episodes] == [e.seed for e in episodes]
    assert [e.data_source for e in episodes[4:]] == [e.data_source + "@greedy" for e in episodes[:4]]
    _, val = write_datasets(
        MIX, tmp_path / "t.parquet", tmp_path / "v.parquet", 8, 4, 0, 1000, val_greedy=True
    )
    assert [EpisodeRow.from_row(r) for r in pd.read_parquet(val).to_dict("records")] == episodes
