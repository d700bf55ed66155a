"""`python -m envs`: list, play (human and expert), experts, and errors."""

import subprocess
import sys

import envs
from envs.__main__ import main, play_episode


def test_list_prints_every_id(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for s in envs.list_envs():
        assert s.id in out


def test_play_with_scripted_answers_shows_rewards(capsys):
    env = envs.make("guess-number-v0", difficulty="easy")
    answers = iter(["banana", "10", None])
    assert play_episode(env, 0, lambda: next(answers)) == 0
    out = capsys.readouterr().out
    assert "no number found" in out and "reward -0.100" in out and "(quit)" in out


def test_play_expert_to_the_end(capsys):
    assert main(["play", "guess-number-v0", "--seed", "2", "--expert", "-o", "difficulty=hard"]) == 0
    assert "Episode over (success" in capsys.readouterr().out


def test_play_unknown_env_is_an_error_naming_the_closest(capsys):
    assert main(["play", "guess-numbr-v0"]) == 2
    assert "guess-number-v0" in capsys.readouterr().err


def test_play_as_a_subprocess_reading_stdin():
    proc = subprocess.run(
        [sys.executable, "-m", "envs", "play", "guess-number-v0", "--seed", "1"],
        input="50\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0 and "50 is too" in proc.stdout


def test_experts_table(capsys):
    assert main(["experts", "--category", "text-game", "--episodes", "3"]) == 0
    assert "guess-number-v0" in capsys.readouterr().out


def test_list_shows_each_category_with_its_count(capsys):
    assert main(["list", "--categories"]) == 0
    out = capsys.readouterr().out
    for category in {s.category for s in envs.list_envs()}:
        assert f"{category}  " in out or out.rstrip().endswith(category)
    assert main(["list", "--category", "no-such-category"]) == 2
    assert "textarena-two-player" in capsys.readouterr().err


def test_list_into_a_closed_pipe_ends_quietly():
    """`python -m envs list | head -1`: the reader leaves early; no BrokenPipeError traceback."""
    import os

    read_end, write_end = os.pipe()
    os.close(read_end)  # closed before anything is written, so the first write fails every time
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "envs", "list"], stdout=write_end, stderr=subprocess.PIPE, timeout=120
        )
    finally:
        os.close(write_end)
    assert proc.returncode == 1
    assert b"Traceback" not in proc.stderr and b"BrokenPipeError" not in proc.stderr, proc.stderr


def test_play_never_prints_negative_zero(capsys):
    # A reward of -0.0 (or a tiny negative one that rounds to it) must print as +0.000.
    env = envs.make("guess-number-v0", difficulty="easy", format_penalty=0.0)
    answers = iter(["banana", "5", "1", "10", None])
    assert play_episode(env, 0, lambda: next(answers)) == 0
    out = capsys.readouterr().out
    assert "reward +0.000" in out and "-0.000" not in out
