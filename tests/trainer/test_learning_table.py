"""The table a run ends with: first and last validation per env beside the random player and the expert."""

from trainer.data.datasets import write_datasets
from trainer.report.learning_table import baseline_success, learning_table, validation_episodes

ENTRIES = [
    {"id": "guess-number-v0", "weight": 0.5, "kwargs": {"difficulty": "easy"}},
    {"id": "maze-v0", "weight": 0.5, "kwargs": {}},
]


def _val_file(tmp_path, greedy=False):
    _, val = write_datasets(
        ENTRIES, tmp_path / "train.parquet", tmp_path / "val.parquet", 8, 16, val_greedy=greedy
    )
    return val


def test_the_validation_episodes_are_read_back_by_source_with_their_seeds_and_kwargs(tmp_path):
    episodes = validation_episodes(_val_file(tmp_path, greedy=True))
    assert set(episodes) == {"guess-number-v0", "maze-v0", "guess-number-v0@greedy", "maze-v0@greedy"}
    assert sum(map(len, episodes.values())) == 32
    env_id, seed, kwargs = episodes["guess-number-v0@greedy"][0]
    assert env_id == "guess-number-v0" and seed >= 1_000_000 and kwargs == {"difficulty": "easy"}
    assert [e[1] for e in episodes["guess-number-v0"]] == [e[1] for e in episodes["guess-number-v0@greedy"]]


def test_the_trivial_players_play_the_same_episodes_under_the_same_turn_cap(tmp_path):
    episodes = validation_episodes(_val_file(tmp_path))["guess-number-v0"]
    players = baseline_success(episodes, max_turns=6)
    assert players["expert"] == (len(episodes), len(episodes))  # binary search needs 5 of 1..20
    assert players["random"][1] == len(episodes) and players["random"][0] < len(episodes)
    # One guess each: binary search's first guess wins only when the secret is the middle.
    assert baseline_success(episodes, max_turns=1)["expert"][0] < len(episodes)


def test_the_table_puts_zero_shot_and_last_step_beside_the_players_and_marks_a_missing_source(tmp_path):
    episodes = validation_episodes(_val_file(tmp_path))
    records = [
        {"step": 0, "kind": "val", "val-aux/guess-number-v0/success/mean@1": 0.0},
        {"step": 10, "kind": "val", "val-aux/guess-number-v0/success/mean@1": 0.25},
        {"step": 20, "kind": "val", "val-aux/guess-number-v0/success/mean@1": 0.5},
    ]
    lines = learning_table(records, episodes, max_turns=6).splitlines()
    assert lines[0].split()[:6] == ["env", "episodes", "step", "0", "(zero-shot)", "step"]
    assert "step 10" not in lines[0]  # first and last only
    guess = next(line for line in lines if line.startswith("guess-number-v0"))
    n = len(episodes["guess-number-v0"])
    assert f" {n} " in guess and "0.0%" in guess and "50.0%" in guess and "100.0%" in guess
    maze = next(line for line in lines if line.startswith("maze-v0"))
    assert maze.split()[2:4] == ["-", "-"]  # no validation figure for it: shown as missing, not 0


def test_no_validation_means_no_table():
    assert learning_table([], {}, None) is None
    assert learning_table([{"step": 3, "val-core/reward": 1.0}], {}, None) is None


def test_step_0_of_a_warm_started_run_is_not_called_zero_shot(tmp_path):
    episodes = validation_episodes(_val_file(tmp_path))
    records = [
        {"step": 0, "val-aux/maze-v0/success/mean@1": 0.1},
        {"step": 4, "val-aux/maze-v0/success/mean@1": 0.3},
    ]
    assert "step 0 (warm-started)" in learning_table(records, episodes, 6, warm_started=True).splitlines()[0]
    assert "step 0 (zero-shot)" in learning_table(records, episodes, 6).splitlines()[0]
