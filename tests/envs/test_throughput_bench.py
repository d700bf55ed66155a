"""bench/env_throughput.py: its framework-cost rows play the very game of its baseline, and it runs."""

from __future__ import annotations

import importlib.util
import random
import subprocess
import sys
from pathlib import Path

import pytest
from gymnasium.utils.env_checker import check_env

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

from bare_guess_number import BareGuessNumber, BareGuessNumberEnv, register_bare_env  # noqa: E402

import envs  # noqa: E402


@pytest.mark.parametrize("seed", range(20))
def test_the_bare_game_env_plays_the_baseline_game_move_for_move(seed):
    game = BareGuessNumber()
    game.reset(random.Random(seed))
    env = envs.make(register_bare_env())
    env.reset(seed=seed)
    while True:
        move = game.expert()
        assert env.unwrapped.expert_action() == move
        message, reward, done = game.step(move)
        messages, env_reward, terminated, truncated, info = env.step(move)
        assert messages == [message] and env_reward == reward and terminated == done
        assert not truncated and info["format_error"] is None
        if done:
            break
    assert env.unwrapped.transcript[-1] == message


def test_the_bare_game_env_passes_gymnasiums_checker():
    env = envs.make(register_bare_env())
    check_env(env.unwrapped)
    check_env(env)


def test_the_bare_game_env_continues_its_stream_across_unseeded_resets():
    env = BareGuessNumberEnv()
    env.reset(seed=3)
    first = env.game.secret
    secrets = []
    for _ in range(20):
        env.reset()
        secrets.append(env.game.secret)
    rng = random.Random(3)
    expected = [rng.randint(1, 100) for _ in range(21)]
    assert [first, *secrets] == expected


def test_the_bench_prints_every_row_and_the_like_for_like_ratio():
    out = subprocess.run(
        [sys.executable, "bench/env_throughput.py", "--episodes", "30", "--rounds", "1", "--peers"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    for row in (
        "bare python",
        "turngym env reused",
        "turngym make() per episode",
        "turngym + bare game, reused",
        "turngym + bare game, make()",
    ):
        assert row in out.stdout
    assert "of the bare new-per-episode row" in out.stdout
    if importlib.util.find_spec("textarena") is not None:  # the train extra installs it
        assert "TextArena make() per episode" in out.stdout
