"""EpisodeRow: the one row format the trainer writes and the agent loop reads, through parquet as verl reads it."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from rollout.episode_row import EpisodeRow, decode_kwargs


def _verl_rows(path) -> list[dict]:
    """The rows as verl's RLHFDataset hands them on: HF datasets over the parquet file."""
    import datasets

    return list(datasets.load_dataset("parquet", data_files=str(path))["train"])


def test_rows_round_trip_through_parquet_as_verl_reads_them(tmp_path):
    # Kwargs a parquet struct could not hold: one key a string in one row and a number in another,
    # an empty mapping and a nested list.
    rows = [
        EpisodeRow("maze-v0", 1, {"difficulty": "easy"}, prompt=[{"role": "user", "content": "go"}], index=0),
        EpisodeRow("other-v0", 2, {"difficulty": 3, "layout": [[1, 2], [3]]}, index=1),
        EpisodeRow("maze-v0", 3, {}, index=2, split="val", sampling_seed=3),
        EpisodeRow("maze-v0", 3, {}, index=2, split="val", sampling_seed=3).greedy_copy(),
    ]
    path = tmp_path / "rows.parquet"
    pd.DataFrame([r.to_row() for r in rows]).to_parquet(path)
    for read in (_verl_rows(path), pd.read_parquet(path).to_dict("records")):
        assert [EpisodeRow.from_row(r) for r in read] == rows
    greedy = EpisodeRow.from_row(_verl_rows(path)[3])
    assert greedy.data_source == "maze-v0@greedy" and greedy.temperature == 0.0
    assert greedy.sampling({"temperature": 1.0, "top_p": 0.9}) == {
        "temperature": 0.0,
        "top_p": 0.9,
        "sampling_seed": 3,
    }


def test_rows_written_by_the_previous_writer_still_load(tmp_path):
    # The layout trainer/data/datasets.py wrote before EpisodeRow, column by column (greedy validation file).
    old = [
        {
            "data_source": "guess-number-v0",
            "prompt": [{"role": "user", "content": "Guess"}],
            "ability": "game",
            "reward_model": {"style": "env", "ground_truth": ""},
            "extra_info": {
                "env_id": "guess-number-v0",
                "seed": 1_000_000,
                "env_kwargs": '{"difficulty": "easy"}',
                "index": 0,
                "split": "val",
            },
            "agent_name": "turngym",
            "turngym_sampling_seed": 1_000_000,
            "turngym_temperature": None,
        },
    ]
    old.append({**old[0], "data_source": "guess-number-v0@greedy", "turngym_temperature": 0.0})
    path = tmp_path / "old.parquet"
    pd.DataFrame(old).to_parquet(path)
    sampled, greedy = (EpisodeRow.from_row(r) for r in pd.read_parquet(path).to_dict("records"))
    assert (sampled.env_id, sampled.seed, sampled.env_kwargs) == (
        "guess-number-v0",
        1_000_000,
        {"difficulty": "easy"},
    )
    assert sampled.temperature is None and greedy.temperature == 0.0 and sampled.sampling_seed == 1_000_000
    assert sampled.prompt == [{"role": "user", "content": "Guess"}] and sampled.split == "val"
    assert sampled.to_row()["extra_info"] == old[0]["extra_info"]


def test_other_row_shapes_the_agent_loop_accepts():
    # Top-level columns (a user's own rows), extra_info as JSON text, kwargs as a parquet struct.
    assert EpisodeRow.from_row({"env_id": "x", "seed": 4, "env_kwargs": None}) == EpisodeRow("x", 4)
    text = EpisodeRow.from_row({"extra_info": '{"env_id": "x", "seed": 2}', "prompt": "Play."})
    assert text.seed == 2 and text.prompt == [{"role": "user", "content": "Play."}]
    struct = {
        "extra_info": {"env_id": "x", "seed": 1, "env_kwargs": {"difficulty": "hard", "max_turns": None}}
    }
    assert EpisodeRow.from_row(struct).env_kwargs == {"difficulty": "hard"}
    # Absent optional columns as pandas fills them (NaN) and as the curriculum marks them ("").
    row = EpisodeRow.from_row(
        {"env_id": "x", "seed": 1, "turngym_temperature": math.nan, "turngym_difficulty": ""}
    )
    assert row.temperature is None and row.difficulty is None and row.play_kwargs() == {}


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"extra_info": {"seed": 1}}, "dataset row has no env_id"),
        ({"env_id": "x", "seed": 1, "env_kwargs": "{bad"}, "env_kwargs is not JSON"),
        (
            {"env_id": "x", "seed": 1, "env_kwargs": "[1]"},
            "env_kwargs must be a JSON object or a dict, got list",
        ),
    ],
)
def test_a_bad_row_is_one_line_saying_what_is_wrong(row, message):
    with pytest.raises(ValueError, match=message) as err:
        EpisodeRow.from_row(row)
    assert "\n" not in str(err.value)


def test_kwargs_encode_to_one_text_per_mapping():
    a = EpisodeRow("x", 1, {"b": 1, "a": 2}).to_row()["extra_info"]["env_kwargs"]
    b = EpisodeRow("x", 1, {"a": 2, "b": 1}).to_row()["extra_info"]["env_kwargs"]
    assert a == b == '{"a": 2, "b": 1}' and decode_kwargs(a) == {"a": 2, "b": 1}
