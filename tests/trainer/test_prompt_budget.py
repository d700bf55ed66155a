"""The prompt-budget check: opening prompts (tool schemas included) measured before Ray starts."""

from __future__ import annotations

import asyncio

import pytest
from transformers import AutoTokenizer

import envs
from rollout.episode import EpisodeConfig, run_episode
from rollout.episode_row import EpisodeRow
from rollout.opening_prompt import opening_prompt
from rollout.scripted_engine import ScriptedEngine
from trainer.checks.prompt_budget import check_prompt_budget, fitted_prompt_length, row_opening_prompt
from trainer.compose import ConfigError
from trainer.data.datasets import rows_for_episodes, write_datasets
from turngym.engines.embedded_model import build_embedded_model

MIX = [
    {"id": "guess-number-v0", "weight": 1.0, "kwargs": {"difficulty": "easy"}},
    {"id": "calculator-qa-v0", "weight": 1.0, "kwargs": {}},
]


@pytest.fixture(scope="module")
def model_path():
    return build_embedded_model()


def test_measures_what_the_rollout_renders(tmp_path, model_path):
    train, val = write_datasets(MIX, tmp_path / "t.parquet", tmp_path / "v.parquet", 6, 2, 0, 1000)
    longest = check_prompt_budget([train, val], model_path, 100_000)
    assert set(longest) == {"guess-number-v0", "calculator-qa-v0"}
    tokenizer = AutoTokenizer.from_pretrained(model_path)
    for env_id, (n_tokens, seed) in longest.items():
        env = envs.make(env_id, **MIX[[m["id"] for m in MIX].index(env_id)]["kwargs"])
        messages, _ = env.reset(seed=seed)
        assert n_tokens == len(opening_prompt(tokenizer, messages, env.tool_schemas).prompt_ids)
    # calculator-qa renders its tool schemas into the prompt; they make it the longer one.
    assert longest["calculator-qa-v0"][0] > longest["guess-number-v0"][0]


@pytest.mark.parametrize("template", ["chatml", "llama3"])
def test_the_budget_measures_the_ids_run_episode_sends(template):
    """A game, a tool env and a conversation: the budget's ids for a row are the rollout's prompt ids."""
    tokenizer = AutoTokenizer.from_pretrained(build_embedded_model(template=template))
    episodes = [
        ("guess-number-v0", 5, {"difficulty": "easy"}),
        ("calculator-qa-v0", 6, {}),
        ("math-tutor-v0", 7, {}),
    ]
    for env_id, seed, kwargs in episodes:
        (row,) = rows_for_episodes([(env_id, seed, kwargs)], "train")
        measured = row_opening_prompt(EpisodeRow.from_row(row), tokenizer).prompt_ids
        engine = ScriptedEngine(tokenizer, lambda turn, rng: "7")
        traj = asyncio.run(
            run_episode(
                envs.make(env_id, **kwargs), engine, tokenizer, seed=seed, config=EpisodeConfig(max_turns=1)
            )
        )
        assert not traj.failed, traj.error
        assert measured == traj.prompt_ids, env_id


def test_too_small_a_budget_names_env_seed_and_what_is_needed(tmp_path, model_path):
    train, val = write_datasets(MIX, tmp_path / "t.parquet", tmp_path / "v.parquet", 6, 2, 0, 1000)
    needed = check_prompt_budget([train, val], model_path, 100_000)["calculator-qa-v0"][0]
    with pytest.raises(ConfigError) as err:
        check_prompt_budget([train, val], model_path, needed - 1)
    text = str(err.value)
    assert "calculator-qa-v0" in text and f"data.max_prompt_length={needed}" in text
    assert check_prompt_budget([train, val], model_path, needed)


def test_trainer_run_stops_before_ray_with_exit_code_2(tmp_path, capsys, run_trainer):
    code = run_trainer(
        [
            "env.id=calculator-qa-v0",
            "data.max_prompt_length=32",
            "env.train_episodes=4",
            "env.val_episodes=2",
            f"turngym.output_dir={tmp_path}",
        ]
    )
    assert code == 2
    err = capsys.readouterr().err
    assert "data.max_prompt_length=32" in err and "calculator-qa-v0" in err
    assert not (tmp_path / "warm_start").exists()


def test_auto_budget_rounds_the_longest_prompt_up_to_a_multiple_of_64():
    assert fitted_prompt_length({"a": (484, 3), "b": (351, 0)}) == 512
    assert fitted_prompt_length({"a": (512, 3)}) == 512
    assert fitted_prompt_length({"a": (513, 3)}) == 576


def test_measure_only_never_raises(tmp_path, model_path):
    train, val = write_datasets(MIX, tmp_path / "t.parquet", tmp_path / "v.parquet", 4, 2, 0, 1000)
    longest = check_prompt_budget([train, val], model_path, None)
    assert all(n > 0 for n, _ in longest.values())
