"""`env=text-game-curriculum` end to end with the embedded model: the pass-rate curriculum's levels and
the adaptive mixture's weights move in metrics.jsonl, follow their rules, and resume from a checkpoint."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from small_run_args import SMALL_RUN

from trainer.hooks.curriculum.pass_rate import STATE_FILE as CURRICULUM_FILE
from trainer.hooks.mixture.adaptive import STATE_FILE as MIXTURE_FILE
from trainer.hooks.mixture.adaptive import AdaptiveMixture, MixtureConfig

REPO = Path(__file__).resolve().parents[2]
GAMES = ("guess-number-v0", "maze-v0", "tic-tac-toe-v0", "wordle-v0")
BASE_WEIGHTS = {"guess-number-v0": 0.4, "maze-v0": 0.2, "tic-tac-toe-v0": 0.2, "wordle-v0": 0.2}


def _train_records(metrics: Path) -> list[dict]:
    records = [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()]
    return [r for r in records if r["kind"] == "train"]


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_curriculum_levels_and_mixture_weights_move_and_resume(tmp_path):
    out = tmp_path / "games"
    base = [
        sys.executable,
        "-m",
        "trainer.run",
        "env=text-game-curriculum",
        # Every env starts at the game itself, which the barely warm-started embedded model loses: the
        # levels must come down, and the envs' groups differ, so the weights move.
        "turngym.curriculum.pass_rate.start=1.0",
        "turngym.curriculum.pass_rate.min_episodes=2",
        "turngym.mixture.smoothing=1.0",
        f"turngym.output_dir={out}",
        *SMALL_RUN,  # 4 rows of 2 samples a step: most steps leave an env out, whose score stays
        "trainer.val_before_train=false",
        "trainer.test_freq=-1",
        "trainer.save_freq=3",
    ]
    proc = subprocess.run(
        [*base, "trainer.total_training_steps=3"], cwd=REPO, capture_output=True, text=True, timeout=1700
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "[turngym] curriculum by pass rate over guess-number-v0 (5 levels)" in proc.stdout
    assert "[turngym] adaptive mixture (floor 0.1, cap 0.5)" in proc.stdout
    train = _train_records(out / "metrics.jsonl")
    assert [r["step"] for r in train] == [1, 2, 3]

    tops = {g: train[0][f"curriculum/{g}/top_level"] for g in GAMES}
    assert tops == {"guess-number-v0": 4.0, "maze-v0": 4.0, "tic-tac-toe-v0": 1.0, "wordle-v0": 9.0}
    levels = {g: [r[f"curriculum/{g}/level"] for r in train] for g in GAMES}
    for game, path in levels.items():
        assert all(0.0 <= x <= tops[game] for x in path), (game, path)
        moves = [b - a for a, b in zip([tops[game], *path], path, strict=False)]
        assert all(abs(m) <= 1.0 + 1e-9 for m in moves), (game, moves)  # max_step
    # Every step judges an env (min_episodes=2 = one row's samples), and this model wins no game itself.
    assert any(path[-1] < tops[game] for game, path in levels.items()), levels

    weights = [{g: r[f"mixture/{g}/weight"] for g in GAMES} for r in train]
    for step in weights:
        assert sum(step.values()) == pytest.approx(1.0)
        assert all(0.1 - 1e-9 <= w <= 0.5 + 1e-9 for w in step.values()), step
    assert any(abs(step[g] - BASE_WEIGHTS[g]) > 0.01 for step in weights for g in GAMES), weights
    # The logged weights are the schedule's, replayed from the logged per-env rates of the envs played.
    replay = AdaptiveMixture(MixtureConfig(enable=True, smoothing=1.0), BASE_WEIGHTS)
    for record, logged in zip(train, weights, strict=True):
        played = [g for g in GAMES if record.get(f"mixture/{g}/share", 0.0) > 0]
        assert sum(record[f"mixture/{g}/share"] for g in played) == pytest.approx(1.0)
        flat = {g: record[f"mixture/{g}/flat_groups"] for g in played}
        replay.update(
            {g: (record[f"mixture/{g}/pass_rate"], None if flat[g] < 0 else flat[g]) for g in played}
        )
        assert replay.weights() == pytest.approx(logged)

    folder = out / "checkpoints" / "global_step_3"
    saved = json.loads((folder / CURRICULUM_FILE).read_text())
    assert {g: s["position"] for g, s in saved["envs"].items()} == pytest.approx(
        {g: p[-1] for g, p in levels.items()}
    )
    assert (folder / MIXTURE_FILE).exists()

    proc = subprocess.run(
        [*base, "trainer.total_training_steps=4"], cwd=REPO, capture_output=True, text=True, timeout=1700
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "[turngym] curriculum by pass rate resumed at step 3" in proc.stdout
    assert "[turngym] mixture resumed at step 3" in proc.stdout
    assert [r["step"] for r in _train_records(out / "metrics.jsonl")] == [1, 2, 3, 4]
