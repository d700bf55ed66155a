"""`python -m envs check ID`: one line per check, PASS/FAIL/SKIP, a failed check's traceback, exit 1 on a
failure and 2 for an unknown id."""

from __future__ import annotations

import subprocess
import sys

import envs.__main__

BROKEN = """\
import random

import envs
from envs.games.guess_number import GuessNumberEnv


class EmptyReplyCrash(GuessNumberEnv):
    def _respond(self, turn):
        if not turn.content.strip():
            return {}["missing"]  # the bug: line 10
        return super()._respond(turn)


class UnseededSecret(GuessNumberEnv):
    def reset(self, *, seed=None, options=None):
        observation = super().reset(seed=seed, options=options)
        self.secret = random.randint(self.low, self.high)  # ignores the seed
        return observation


class WrongExpert(GuessNumberEnv):
    def expert_action(self):
        return str(self.high)  # always the top of the range: never the secret on these seeds


envs.register("empty-reply-crash-v0", EmptyReplyCrash)
envs.register("wrong-expert-v0", WrongExpert)
envs.register("unseeded-secret-v0", UnseededSecret)
"""


def test_a_sound_env_passes_every_check(capsys):
    assert envs.__main__.main(["check", "guess-number-v0", "--seeds", "2"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    names = ["make", "gymnasium", "determinism", "hostile inputs", "random", "expert"]
    assert [line.split("  ")[1].strip() for line in lines[:-1]] == names, lines
    assert all(line.startswith("PASS  ") for line in lines[:-1]), lines
    assert "expert          2/2 succeeded (100%)" in lines[5]
    assert lines[-1] == "guess-number-v0: 6 passed, 0 failed, 0 skipped"


def test_an_env_without_players_skips_them(capsys):
    assert envs.__main__.main(["check", "textarena/GuessTheNumber-v0", "--seeds", "1"]) == 0
    out = capsys.readouterr().out
    assert "SKIP  random          the env has no random_action" in out
    assert out.strip().endswith("4 passed, 0 failed, 2 skipped")


def _check(tmp_path, env_id):
    (tmp_path / "my_broken_envs.py").write_text(BROKEN)
    argv = [sys.executable, "-m", "envs", "check", env_id, "--import", "my_broken_envs", "--seeds", "2"]
    return subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=300)


def test_an_env_that_raises_fails_with_its_traceback_and_exit_1(tmp_path):
    proc = _check(tmp_path, "empty-reply-crash-v0")
    assert proc.returncode == 1, proc.stderr
    lines = proc.stdout.splitlines()
    hostile = next(line for line in lines if "hostile inputs" in line)
    assert hostile.startswith("FAIL  hostile inputs  ") and "empty: raised KeyError: 'missing'" in hostile
    # Gymnasium's check_env steps with an empty reply too: both checks fail, each with the env's file and line.
    assert (
        next(line for line in lines if "gymnasium" in line)
        == "FAIL  gymnasium       raised KeyError: 'missing'"
    )
    where = f'{tmp_path / "my_broken_envs.py"}", line 10, in _respond'
    assert sum(where in line for line in lines) == 2, proc.stdout
    assert lines[-1] == "empty-reply-crash-v0: 4 passed, 2 failed, 0 skipped"


def test_an_env_that_ignores_its_seed_fails_determinism(tmp_path):
    proc = _check(tmp_path, "unseeded-secret-v0")
    assert proc.returncode == 1, proc.stderr
    determinism = next(line for line in proc.stdout.splitlines() if "determinism" in line)
    assert determinism.startswith("FAIL  determinism     seed 0: turn "), determinism


def test_an_expert_that_never_wins_nor_earns_fails_but_one_that_draws_passes(tmp_path, capsys):
    proc = _check(tmp_path, "wrong-expert-v0")
    assert proc.returncode == 1, proc.stderr
    expert = proc.stdout.splitlines()[-2]
    assert (
        expert.startswith("FAIL  expert          0/2 succeeded") and "worse than the random player" in expert
    )
    # Tic-tac-toe's expert draws a perfect opponent (success is a win): not a fault.
    assert envs.__main__.main(["check", "tic-tac-toe-v0", "--seeds", "2"]) == 0
    assert "PASS  expert          0/2 succeeded (0%), mean return 0.500" in capsys.readouterr().out


def test_an_unknown_id_is_one_line_with_did_you_mean(capsys):
    assert envs.__main__.main(["check", "guess-numbr-v0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Did you mean 'guess-number-v0'" in err[0], err
