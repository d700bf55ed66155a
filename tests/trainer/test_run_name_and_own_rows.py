"""turngym.run_name (a fresh run beside the default one), training on your own dataset rows, and nothing
under a run's folder changing before every argument passed its checks."""

from __future__ import annotations

import json
import os

import pandas as pd
import pytest

from trainer.checks.run_checks import RUN_RECORD, apply_run_name, check_run, write_run_record
from trainer.compose import ConfigError, compose_config

BASE = ["env.id=guess-number-v0", "trainer.device=cpu", "env.train_episodes=4", "env.val_episodes=2"]


def _cfg(out, *extra: str):
    cfg = compose_config(BASE + [f"turngym.output_dir={out}", *extra])
    apply_run_name(cfg)
    return cfg


def _finished_run(out, step: int = 16) -> None:
    write_run_record(compose_config(BASE + [f"turngym.output_dir={out}"]))
    (out / "checkpoints" / f"global_step_{step}" / "actor").mkdir(parents=True)
    (out / "checkpoints" / "latest_checkpointed_iteration.txt").write_text(str(step))


def _snapshot(folder) -> dict:
    return {p: p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def restore_environ():
    """prepare() exports what verl's processes need into os.environ: undo it after the test."""
    saved = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(saved)


def test_run_name_puts_the_run_under_runs_and_leaves_the_default_folder_alone(tmp_path):
    default = _cfg(tmp_path)
    assert default.turngym.output_dir == str(tmp_path)
    assert default.trainer.experiment_name == default.env.name == "guess-number-v0"
    named = _cfg(tmp_path, "turngym.run_name=lr-sweep.1")
    run = tmp_path / "runs" / "lr-sweep.1"
    assert named.turngym.output_dir == str(run)
    assert named.data.train_files == str(run / "data" / "train.parquet")
    assert named.trainer.default_local_dir == str(run / "checkpoints")
    assert named.turngym.metrics_file == str(run / "metrics.jsonl")
    assert named.trainer.experiment_name == "guess-number-v0-lr-sweep.1"
    # The default folder of an env group: outputs/<env name>/runs/<name>.
    cfg = compose_config(["env=text-game", "trainer.device=cpu", "turngym.run_name=a"])
    apply_run_name(cfg)
    assert cfg.turngym.output_dir == "outputs/text-game/runs/a"


@pytest.mark.parametrize("name", ["../escape", "a/b", ".hidden", "with space"])
def test_a_run_name_that_is_not_a_plain_folder_name_is_refused(tmp_path, name, capsys, run_trainer):
    assert run_trainer(BASE + [f"turngym.output_dir={tmp_path}", f"turngym.run_name={name}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(f"trainer.run: turngym.run_name={name!r}: use a folder name")
    assert list(tmp_path.iterdir()) == []


def test_the_refusal_names_run_name_and_following_it_starts_a_fresh_run(
    tmp_path, capsys, run_trainer, restore_environ
):
    from trainer.run import prepare, stage_run

    _finished_run(tmp_path)
    before = _snapshot(tmp_path)
    ppo = ["algorithm=ppo", "trainer.total_training_steps=2", "turngym.warm_start.enable=false"]
    assert run_trainer(BASE + [f"turngym.output_dir={tmp_path}", *ppo]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert f"turngym.run_name=NAME (a fresh run in {tmp_path / 'runs'}/NAME)" in err
    assert "algorithm.adv_estimator grpo -> gae" in err and "\n" not in err
    assert _snapshot(tmp_path) == before

    # The advice, followed: the same command with a run name passes every check and fills its own folder.
    cfg = _cfg(tmp_path, *ppo, "turngym.run_name=ppo")
    check_run(cfg)
    prepare(cfg, stage_run(cfg))
    run = tmp_path / "runs" / "ppo"
    assert (run / "data" / "train.parquet").exists() and (run / "data" / "val.parquet").exists()
    record = json.loads((run / RUN_RECORD).read_text())
    assert record["algorithm.adv_estimator"] == "gae" and record["model"] == "embedded"
    assert {p: b for p, b in _snapshot(tmp_path).items() if "runs" not in p.parts} == before
    # A named run refused later suggests another name beside it, not a folder inside it.
    (run / "checkpoints").mkdir()
    (run / "checkpoints" / "latest_checkpointed_iteration.txt").write_text("2")
    (run / "checkpoints" / "global_step_2").mkdir()
    with pytest.raises(ConfigError, match=f"a fresh run in {tmp_path / 'runs'}/NAME"):
        check_run(_cfg(tmp_path, "turngym.run_name=ppo"))


def test_a_bad_argument_leaves_an_existing_runs_files_byte_identical(tmp_path, capsys, run_trainer):
    from trainer.data.datasets import write_datasets

    entries = [{"id": "guess-number-v0", "weight": 1.0, "kwargs": {"difficulty": "hard"}}]
    write_datasets(entries, tmp_path / "data" / "train.parquet", tmp_path / "data" / "val.parquet", 4, 2)
    (tmp_path / "train.log").write_text("an earlier run's log\n")
    before = _snapshot(tmp_path)
    common = BASE + [f"turngym.output_dir={tmp_path}"]
    for bad in (
        ["data.max_prompt_length=16"],  # the prompt budget, measured on the new rows
        [
            "turngym.curriculum.enable=true",
            "turngym.curriculum.promote_at=0.1",
            "turngym.curriculum.demote_at=0.5",
        ],
        ["env.seed_base=0", "env.val_seed_base=2"],  # overlapping seeds
        [f"data.train_files={tmp_path / 'missing.parquet'}"],
        ["data.val_files=null"],
    ):
        assert run_trainer(common + bad) == 2, bad
        err = capsys.readouterr().err.strip().splitlines()
        assert err[-1].startswith("trainer.run: "), (bad, err)
        assert _snapshot(tmp_path) == before, bad
        assert sorted(p.name for p in tmp_path.iterdir()) == ["data", "train.log"]


def _own_rows(path, rows):
    pd.DataFrame(rows).to_parquet(path)
    return path


def test_own_rows_are_expanded_into_the_run_and_the_users_file_is_never_written(tmp_path, restore_environ):
    from trainer.run import prepare, stage_run

    rows = _own_rows(
        tmp_path / "mine.parquet",
        {
            "env_id": ["guess-number-v0", "maze-v0", "guess-number-v0"],
            "seed": [7, 3, 11],
            "env_kwargs": ['{"difficulty": "hard"}', None, "{}"],
        },
    )
    val = _own_rows(tmp_path / "mine_val.parquet", {"env_id": ["maze-v0"], "seed": [8]})
    mine = rows.read_bytes()
    out = tmp_path / "run"
    cfg = _cfg(out, f"data.train_files={rows}", f"data.val_files={val}", "turngym.warm_start.enable=false")
    check_run(cfg)
    staged = stage_run(cfg)
    assert not out.exists()  # checked in a scratch folder first
    prepare(cfg, staged)
    assert rows.read_bytes() == mine
    assert cfg.data.train_files == str(out / "data" / "train.parquet")
    train = pd.read_parquet(out / "data" / "train.parquet")
    assert [(i["env_id"], i["seed"], json.loads(i["env_kwargs"])) for i in train["extra_info"]] == [
        ("guess-number-v0", 7, {"difficulty": "hard"}),
        ("maze-v0", 3, {}),
        ("guess-number-v0", 11, {}),
    ]
    assert all(len(p) > 0 for p in train["prompt"]) and set(train["agent_name"]) == {"turngym"}
    val_rows = pd.read_parquet(out / "data" / "val.parquet")
    # The embedded defaults also play held-out rows greedily (turngym.val_greedy).
    assert list(val_rows["data_source"]) == ["maze-v0", "maze-v0@greedy"]
    assert list(val_rows["turngym_sampling_seed"]) == [8, 8]  # the user's own held-out rows too
    record = json.loads((out / RUN_RECORD).read_text())
    assert record["data"]["train_files"]["file"] == str(rows)
    # The run's envs (what rollout.eval plays by default) are the kinds in the rows, weighted by count.
    assert [(e["id"], e["kwargs"], e["weight"]) for e in record["env"]] == [
        ("guess-number-v0", {"difficulty": "hard"}, 1.0),
        ("guess-number-v0", {}, 1.0),
        ("maze-v0", {}, 1.0),
    ]

    # Resuming with changed rows is another run.
    (out / "checkpoints" / "global_step_1").mkdir(parents=True)
    (out / "checkpoints" / "latest_checkpointed_iteration.txt").write_text("1")
    check_run(_cfg(out, f"data.train_files={rows}", f"data.val_files={val}"))
    _own_rows(rows, {"env_id": ["guess-number-v0"], "seed": [7]})
    with pytest.raises(ConfigError, match="data .*sha256"):
        check_run(_cfg(out, f"data.train_files={rows}", f"data.val_files={val}"))


def test_rows_in_turngyms_own_layout_are_accepted_and_val_can_stay_generated(tmp_path):
    from trainer.data.datasets import write_datasets
    from trainer.data.run_data import discard
    from trainer.run import stage_run

    entries = [{"id": "wordle-v0", "weight": 1.0, "kwargs": {}}]
    earlier, _ = write_datasets(
        entries, tmp_path / "old" / "train.parquet", tmp_path / "old" / "v.parquet", 3, 1
    )
    cfg = _cfg(tmp_path / "run", f"data.train_files={earlier}")
    staged = stage_run(cfg)
    try:
        files = {target.name: source for source, target in staged.moves.items()}
        train = pd.read_parquet(files["train.parquet"])
        assert [i["env_id"] for i in train["extra_info"]] == ["wordle-v0"] * 3
        val = pd.read_parquet(files["val.parquet"])  # from env.*: guess-number-v0, seeds 1 000 000 on
        assert {i["env_id"] for i in val["extra_info"]} == {"guess-number-v0"}
        # held-out rows seed their sampling with their env seed; training rows do not
        assert list(val["turngym_sampling_seed"]) == [i["seed"] for i in val["extra_info"]]
        assert "turngym_sampling_seed" not in train.columns
    finally:
        discard(staged)


@pytest.mark.parametrize(
    ("rows", "needle"),
    [
        ({"env": ["guess-number-v0"], "seed": [1]}, "missing column(s) env_id (it has: env, seed)"),
        (
            {"env_id": ["guess-numbr-v0"], "seed": [1]},
            "row 0: env 'guess-numbr-v0' is not registered (did you mean",
        ),
        ({"env_id": ["maze-v0", "maze-v0"], "seed": [1, -2]}, "row 1: seed -2 is not a non-negative integer"),
        (
            {"env_id": ["maze-v0"], "seed": [1], "env_kwargs": ["[1]"]},
            "row 0: env_kwargs must be a JSON object",
        ),
        ({"env_id": ["maze-v0"], "seed": [1], "env_kwargs": ["{bad"]}, "row 0: env_kwargs is not JSON"),
        (
            {"env_id": ["maze-v0"], "seed": [1], "env_kwargs": ['{"difficulty": "insane"}']},
            "row 0: maze-v0 cannot be built with env_kwargs",
        ),
        ({"env_id": [], "seed": []}, "the file has no rows"),
    ],
)
def test_bad_own_rows_are_one_line_before_anything_is_written(tmp_path, rows, needle, capsys, run_trainer):
    path = tmp_path / "mine.parquet"
    pd.DataFrame(rows).to_parquet(path)
    out = tmp_path / "run"
    assert run_trainer(BASE + [f"turngym.output_dir={out}", f"data.train_files={path}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(f"trainer.run: data.train_files={path}: "), err
    assert needle in err[-1], err[-1]
    assert not out.exists()


def test_validation_rows_may_not_replay_training_rows(tmp_path):
    from trainer.run import stage_run

    rows = _own_rows(tmp_path / "mine.parquet", {"env_id": ["maze-v0", "maze-v0"], "seed": [1, 2]})
    val = _own_rows(tmp_path / "val.parquet", {"env_id": ["maze-v0"], "seed": [2]})
    with pytest.raises(ConfigError, match="1 validation episode"):
        stage_run(_cfg(tmp_path / "run", f"data.train_files={rows}", f"data.val_files={val}"))
    # One side generated: its seeds (val from 1 000 000 on) are checked against the user's too.
    clash = _own_rows(
        tmp_path / "clash.parquet",
        {"env_id": ["guess-number-v0"], "seed": [1_000_000], "env_kwargs": ['{"difficulty": "easy"}']},
    )
    with pytest.raises(ConfigError, match="guess-number-v0 seed 1000000"):
        stage_run(_cfg(tmp_path / "run", f"data.train_files={clash}"))


def test_a_finished_named_run_is_reported_with_the_way_to_start_afresh(tmp_path, capsys, run_trainer):
    run = tmp_path / "runs" / "first"
    (run / "checkpoints").mkdir(parents=True)
    (run / "checkpoints" / "latest_checkpointed_iteration.txt").write_text("3")
    args = BASE + [
        f"turngym.output_dir={tmp_path}",
        "turngym.run_name=first",
        "trainer.total_training_steps=3",
    ]
    assert run_trainer(args) == 0
    out = capsys.readouterr().out
    assert f"{run} already holds a finished run (3 steps)" in out
    assert f"turngym.run_name=NAME (a fresh run in {tmp_path / 'runs'}/NAME)" in out
    assert not (tmp_path / "data").exists()  # the default run's folder is untouched
