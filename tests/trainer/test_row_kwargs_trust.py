"""A user's dataset rows choose only what a served env's client may: game options, never isolation or tools."""

from __future__ import annotations

import pandas as pd
import pytest

from trainer.compose import ConfigError
from trainer.data.user_rows import read_episodes


@pytest.mark.parametrize(
    ("env_id", "kwargs", "key"),
    [
        ("code-sandbox-v0", '{"isolation": "none"}', "isolation"),
        ("code-sandbox-v0", '{"sandbox": "fusion", "sandbox_endpoint": "http://127.0.0.1:9"}', "sandbox"),
        ("code-sandbox-v0", '{"tools": "/tmp/shell.yaml"}', "tools"),
        ("maze-v0", '{"remote_token": "x"}', "remote_token"),
        ("maze-v0", '{"max_turns": 1000}', "max_turns"),
        ("maze-v0", '{"difficulty": {"isolation": "none"}}', "difficulty"),
    ],
)
def test_rows_with_operator_kwargs_are_refused_before_any_env_is_built(tmp_path, env_id, kwargs, key):
    path = tmp_path / "rows.parquet"
    pd.DataFrame({"env_id": [env_id, env_id], "seed": [1, 2], "env_kwargs": ["{}", kwargs]}).to_parquet(path)
    with pytest.raises(ConfigError) as refused:
        read_episodes(path, "train_files")
    message = str(refused.value)
    assert "row 1" in message and (repr(key) in message or f"{key}=" in message)
    assert "\n" not in message


def test_rows_with_game_options_are_read(tmp_path):
    path = tmp_path / "rows.parquet"
    pd.DataFrame(
        {
            "env_id": ["code-sandbox-v0", "maze-v0", "textarena/TicTacToe-v0"],
            "seed": [1, 2, 3],
            "env_kwargs": ['{"tier": "easy"}', '{"difficulty": "hard", "max_turns": 5}', '{"seat": 1}'],
        }
    ).to_parquet(path)
    assert read_episodes(path, "train_files") == [
        ("code-sandbox-v0", 1, {"tier": "easy"}),
        ("maze-v0", 2, {"difficulty": "hard", "max_turns": 5}),
        ("textarena/TicTacToe-v0", 3, {"seat": 1}),
    ]


def test_the_operators_env_kwargs_apply_to_every_own_row_over_the_rows_own(tmp_path):
    # The rows may not name operator settings, but the person running the trainer may: env.kwargs reaches
    # every row (here a stricter turn limit), and wins over what a row chose.
    from trainer.checks.run_checks import apply_run_name
    from trainer.compose import compose_config
    from trainer.data.run_data import discard
    from trainer.run import stage_run

    rows = tmp_path / "rows.parquet"
    pd.DataFrame(
        {"env_id": ["maze-v0", "maze-v0"], "seed": [1, 2], "env_kwargs": ['{"max_turns": 9}', "{}"]}
    ).to_parquet(rows)
    cfg = compose_config(
        [
            "env.id=guess-number-v0",
            "trainer.device=cpu",
            "env.train_episodes=4",
            "env.val_episodes=2",
            f"turngym.output_dir={tmp_path / 'run'}",
            f"data.train_files={rows}",
            "env.kwargs.max_turns=3",
        ]
    )
    apply_run_name(cfg)
    staged = stage_run(cfg)
    try:
        files = {target.name: source for source, target in staged.moves.items()}
        train = pd.read_parquet(files["train.parquet"])
        assert [i["env_kwargs"] for i in train["extra_info"]] == ['{"max_turns": 3}'] * 2
    finally:
        discard(staged)
