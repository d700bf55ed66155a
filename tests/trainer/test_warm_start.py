"""Warm start: expert demonstrations read by verl's SFT dataset, and verl's SFT trainer run on CPU."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainer.compose import compose_config, env_entries
from trainer.warm_start.expert_demos import expert_episode, write_demonstrations
from turngym.engines.embedded_model import build_embedded_model

GROUPS = ["text-game", "tool-use", "math-tutor", "code-sandbox"]
# A warm start small enough for a test (warm_start() has no defaults: they live in turngym.yaml).
SMALL = {
    "episodes": 8,
    "epochs": 2,
    "lr": 5e-3,
    "batch_size": 4,
    "seed": 10_000,
    "device": "cpu",
    "max_length": 2048,
    "engine": "verl",
}


def _sft_dataset(demos: Path, tokenizer):
    from omegaconf import OmegaConf

    from trainer.warm_start.expert_sft_dataset import ExpertSFTDataset

    config = OmegaConf.create({"pad_mode": "no_padding", "max_length": 8192, "truncation": "error"})
    return ExpertSFTDataset(str(demos), tokenizer, config)


@pytest.mark.parametrize("group", GROUPS)
def test_demonstrations_train_exactly_the_expert_turns(group, tmp_path):
    """verl's dataset renders each row as the chat template renders the whole conversation
    (its own sanity check raises otherwise) and trains only on the expert's replies."""
    from transformers import AutoTokenizer

    entries = env_entries(compose_config([f"env={group}", "trainer.device=cpu"]))
    report = write_demonstrations(entries, tmp_path / "demos.parquet", episodes=6, seed=10_000)
    assert report["episodes"] == 6
    tokenizer = AutoTokenizer.from_pretrained(build_embedded_model())
    dataset = _sft_dataset(tmp_path / "demos.parquet", tokenizer)
    assert len(dataset) == 6
    rows = dataset.dataframe.to_dict("records")
    for index, row in enumerate(rows):
        item = dataset[index]
        convo, tools, _ = expert_episode(row["env_id"], _kwargs(entries, row["env_id"]), int(row["seed"]))
        assert dataset.tools[index] == (tools or None)
        trained = tokenizer.decode(item["input_ids"][item["loss_mask"].bool()])
        replies = [m["content"] for m in convo if m["role"] == "assistant"]
        # every reply, each followed by the template's end-of-turn token, and nothing else
        assert trained == "".join(f"{r}<|im_end|>\n" for r in replies)


def _kwargs(entries: list[dict], env_id: str) -> dict:
    return next(dict(e["kwargs"]) for e in entries if e["id"] == env_id)


@pytest.mark.slow
def test_warm_start_runs_verls_sft_trainer_and_keeps_the_base_tokenizer(tmp_path):
    import torch
    from safetensors.torch import load_file

    from trainer.warm_start.runner import warm_start

    base = build_embedded_model()
    entries = [{"id": "guess-number-v0", "weight": 1.0, "kwargs": {"difficulty": "easy"}}]
    report = warm_start(base, tmp_path, entries, **SMALL)
    assert report["optimizer_steps"] == 4 and report["episodes"] == 8
    assert report["loss_last"] < report["loss_first"]
    model = Path(report["model"])
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "config.json"):
        assert (model / name).read_bytes() == (base / name).read_bytes()
    before, after = load_file(base / "model.safetensors"), load_file(model / "model.safetensors")
    assert before.keys() == after.keys()
    assert all(after[k].dtype == torch.float32 for k in after)
    assert any(not torch.equal(before[k], after[k]) for k in before)

    # finished: the second call reads the report instead of training again
    (tmp_path / "sft.log").unlink()
    assert warm_start(base, tmp_path, entries, **SMALL) == report
    assert not (tmp_path / "sft.log").exists()


@pytest.mark.slow
def test_a_failing_sft_run_reports_verls_error_and_leaves_no_model(tmp_path):
    from trainer.warm_start.runner import WarmStartError, finished_warm_start, warm_start

    entries = [{"id": "wordle-v0", "weight": 1.0, "kwargs": {}}]
    with pytest.raises(WarmStartError) as info:
        warm_start(
            build_embedded_model(),
            tmp_path,
            entries,
            **{**SMALL, "episodes": 4, "max_length": 32},
            overrides=["data.truncation=error"],
        )
    assert "is larger than" in str(info.value) and "sft.log" in str(info.value)
    assert finished_warm_start(tmp_path) is None and not (tmp_path / "model").exists()
    assert "is larger than" in (tmp_path / "sft.log").read_text()  # the full log stays for the user


def test_the_torch_engine_learns_the_expert_replies_and_keeps_the_base_tokenizer(tmp_path):
    """engine=torch (the CPU default): overfit on four expert episodes, the model's greedy first
    move is the expert's, and the saved model is the base one with new weights."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from trainer.warm_start.runner import finished_warm_start, warm_start

    base = build_embedded_model()
    entries = [
        {"id": "guess-number-v0", "weight": 1.0, "kwargs": {"difficulty": "easy", "action_tool": False}}
    ]
    report = warm_start(base, tmp_path, entries, **{**SMALL, "episodes": 4, "epochs": 60, "engine": "torch"})
    assert report["engine"] == "torch" and report["optimizer_steps"] == 60
    assert report["loss_last"] < report["loss_first"] / 3
    model_dir = Path(report["model"])
    assert finished_warm_start(tmp_path) == model_dir
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "config.json"):
        assert (model_dir / name).read_bytes() == (base / name).read_bytes()

    convo, _, _ = expert_episode("guess-number-v0", entries[0]["kwargs"], 10_000)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    prompt = tokenizer.apply_chat_template(convo[:2], add_generation_prompt=True, return_tensors="pt")
    prompt = prompt["input_ids"] if not isinstance(prompt, torch.Tensor) else prompt
    out = model.generate(prompt, max_new_tokens=4, do_sample=False)
    reply = tokenizer.decode(out[0, prompt.shape[1] :], skip_special_tokens=True)
    assert reply.strip() == convo[2]["content"] == "10"


def test_the_torch_engine_runs_in_a_child_whose_failure_is_one_error_and_leaves_no_model(tmp_path):
    """The loop runs out of the trainer's process (its memory goes back when it ends): the losses come
    back through the metrics file, and a crash in the child is a WarmStartError naming its log."""
    from trainer.warm_start.runner import WarmStartError, finished_warm_start, warm_start

    entries = [{"id": "guess-number-v0", "weight": 1.0, "kwargs": {"difficulty": "easy"}}]
    missing = tmp_path / "no-such-model"
    missing.mkdir()
    with pytest.raises(WarmStartError) as info:
        warm_start(missing, tmp_path / "out", entries, **{**SMALL, "episodes": 4, "engine": "torch"})
    message = str(info.value)
    assert message.startswith("the warm start's SFT loop exited with 1") and "sft.log" in message
    assert "Traceback" in message  # the child's own last lines, not a bare exit code
    assert finished_warm_start(tmp_path / "out") is None and not (tmp_path / "out" / "model").exists()


def test_warm_start_engine_is_checked_before_any_work():
    from trainer.checks.config_error import ConfigError
    from trainer.compose import compose_config

    assert compose_config(["env=text-game", "trainer.device=cpu"]).turngym.warm_start.engine == "auto"
    with pytest.raises(ConfigError, match="choose one of auto, verl, torch"):
        compose_config(["env=text-game", "trainer.device=cpu", "turngym.warm_start.engine=jax"])
    with pytest.raises(ConfigError, match="engine=torch does not run"):
        compose_config(
            [
                "env=text-game",
                "trainer.device=cpu",
                "turngym.warm_start.engine=torch",
                'turngym.warm_start.overrides=["optim.lr_warmup_steps=5"]',
            ]
        )


def test_losses_come_from_verls_file_logger_whole_lines_only(tmp_path):
    import json

    from trainer.warm_start.runner import _logged_losses

    path = tmp_path / "sft_metrics.jsonl"
    assert _logged_losses(path, 0) == ([], 0)  # verl has not opened it yet
    first = json.dumps({"step": 1, "data": {"train/loss": 2.5, "train/lr": 0.003}}) + "\n"
    val = json.dumps({"step": 1, "data": {"val/loss": 2.0}}) + "\n"
    second = json.dumps({"step": 2, "data": {"train/loss": 1.5}}) + "\n"
    path.write_text(first + val + second[:10])
    steps, offset = _logged_losses(path, 0)
    assert steps == [(1, 2.5)] and offset == len(first + val)
    path.write_text(first + val + second)
    assert _logged_losses(path, offset) == ([(2, 1.5)], len(first + val + second))


def test_the_verl_engine_always_logs_to_the_file_the_losses_come_from():
    from trainer.warm_start.runner import sft_config

    args = ("model", Path("d.parquet"), Path("w"), "cpu", 1, 1e-3, 4, 0, 64)
    assert list(sft_config(*args).trainer.logger) == ["console", "file"]
    assert list(sft_config(*args, overrides=["trainer.logger=[console]"]).trainer.logger) == [
        "console",
        "file",
    ]


def test_noisy_demonstrator_mixes_random_moves_reproducibly():
    """expert_noise replaces some expert moves with the env's random_action, the same ones for a seed."""
    kwargs = {"difficulty": "easy", "action_tool": False}
    clean, _, clean_return = expert_episode("guess-number-v0", kwargs, 10_000)
    assert clean_return >= 1.0  # binary search always wins within the optimal number of guesses
    noisy = [expert_episode("guess-number-v0", kwargs, seed, noise=0.75) for seed in range(10_000, 10_040)]
    again = [expert_episode("guess-number-v0", kwargs, seed, noise=0.75) for seed in range(10_000, 10_040)]
    assert noisy == again
    returns = [total for _, _, total in noisy]
    # An epsilon-greedy demonstrator loses some episodes binary search wins, and still wins others.
    assert min(returns) < 1.0 <= max(returns)
    replies = [m["content"] for convo, _, _ in noisy for m in convo if m["role"] == "assistant"]
    assert all(r.isdigit() and 1 <= int(r) <= 20 for r in replies)


def test_noise_needs_an_env_with_random_action(tmp_path):
    with pytest.raises(NotImplementedError, match="expert_noise=0"):
        expert_episode("math-tutor-v0", {}, 10_000, noise=0.999)
    with pytest.raises(ValueError, match="expert_noise must be in"):
        from trainer.warm_start.runner import warm_start

        entries = [{"id": "guess-number-v0", "weight": 1.0, "kwargs": {}}]
        warm_start(build_embedded_model(), tmp_path, entries, **SMALL, expert_noise=1.0)
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("other", ["random", "talk"])
def test_expert_share_mixes_in_a_weaker_players_whole_episodes(other, tmp_path):
    """expert_share picks exactly that share of episodes for the expert; other_player plays the rest."""
    import pandas as pd

    from trainer.warm_start.expert_demos import TALK_REPLY, TALK_TURNS

    entries = [
        {"id": "guess-number-v0", "weight": 1.0, "kwargs": {"difficulty": "easy", "action_tool": False}}
    ]
    report = write_demonstrations(
        entries, tmp_path / "demos.parquet", episodes=20, seed=10_000, expert_share=0.25, other_player=other
    )
    assert (report["episodes"], report["expert_episodes"], report["other_player"]) == (20, 5, other)
    rows = pd.read_parquet(tmp_path / "demos.parquet").to_dict("records")
    expert_rows, other_rows = [], []
    for row in rows:
        replies = [m["content"] for m in row["messages"] if m["role"] == "assistant"]
        clean, _, _ = expert_episode("guess-number-v0", entries[0]["kwargs"], int(row["seed"]))
        (expert_rows if list(row["messages"]) == clean else other_rows).append(replies)
    assert len(expert_rows) == 5
    if other == "talk":
        assert all(replies == [TALK_REPLY] * TALK_TURNS for replies in other_rows)
    else:
        # the env's random player: numbers of the announced range, not binary search
        assert all(r.isdigit() and 1 <= int(r) <= 20 for replies in other_rows for r in replies)
    again = write_demonstrations(
        entries, tmp_path / "again.parquet", episodes=20, seed=10_000, expert_share=0.25, other_player=other
    )
    assert again == report
    assert pd.read_parquet(tmp_path / "again.parquet").equals(pd.read_parquet(tmp_path / "demos.parquet"))


@pytest.mark.parametrize(
    ("setting", "match"),
    [
        ({"expert_share": 0.0}, "expert_share must be in"),
        ({"expert_share": 1.5}, "expert_share must be in"),
        ({"other_player": "chatty"}, "other_player must be one of"),
    ],
)
def test_bad_demonstrator_mixtures_fail_before_any_work(setting, match, tmp_path):
    from trainer.warm_start.runner import warm_start

    entries = [{"id": "guess-number-v0", "weight": 1.0, "kwargs": {}}]
    with pytest.raises(ValueError, match=match):
        warm_start(build_embedded_model(), tmp_path, entries, **SMALL, **setting)
    assert not any(tmp_path.iterdir())
