"""A dataset row's numbers are finite and bounded: absurd penalties and seeds are refused in one line."""

from __future__ import annotations

import pandas as pd
import pytest

from trainer.compose import ConfigError
from trainer.data.user_rows import MAX_SEED, read_episodes


def _rows(tmp_path, seed, kwargs="{}"):
    path = tmp_path / "rows.parquet"
    pd.DataFrame(
        {"env_id": ["maze-v0", "maze-v0"], "seed": [1, seed], "env_kwargs": ["{}", kwargs]}
    ).to_parquet(path)
    return path


@pytest.mark.parametrize(
    "kwargs", ['{"format_penalty": 1e308}', '{"format_penalty": 1e20}', '{"format_penalty": Infinity}']
)
def test_a_row_cannot_set_an_absurd_format_penalty(tmp_path, kwargs):
    with pytest.raises(ConfigError) as refused:
        read_episodes(_rows(tmp_path, 2, kwargs), "train_files")
    message = str(refused.value)
    assert "row 1" in message and "format_penalty" in message and "\n" not in message


@pytest.mark.parametrize("seed", [1e300, float("inf"), float(MAX_SEED) * 4])
def test_a_row_cannot_carry_an_absurd_seed(tmp_path, seed):
    with pytest.raises(ConfigError) as refused:
        read_episodes(_rows(tmp_path, seed), "train_files")
    message = str(refused.value)
    assert "row 1" in message and "seed" in message and "\n" not in message


def test_rows_inside_the_bounds_are_read(tmp_path):
    path = _rows(tmp_path, MAX_SEED, '{"format_penalty": 2.5}')
    assert read_episodes(path, "train_files")[1] == ("maze-v0", MAX_SEED, {"format_penalty": 2.5})
