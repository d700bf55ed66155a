"""Issue 45, item 9: `python -m envs check` on a hostile env. Before, the battery ran in the checker's own
process: an env that called `sys.exit(0)` or `os._exit(0)` mid-battery made the check exit 0, one that
never answered hung it with no deadline, and a string reward on turns the hostile inputs never reached
passed. Each env here is a real module imported by a real `python -m envs check` process.
"""

from __future__ import annotations

import subprocess
import sys

HOSTILE = """\
import os
import sys
import time

import envs
from envs.games.guess_number import GuessNumberEnv


def special(action):
    # Mid-battery: the hostile inputs send chat-template special tokens, gymnasium's checker never does.
    return isinstance(action, str) and "<|im_end|>" in action


class ExitsMidBattery(GuessNumberEnv):
    def step(self, action):
        if special(action):
            sys.exit(0)
        return super().step(action)


class HardExitsMidBattery(GuessNumberEnv):
    def step(self, action):
        if special(action):
            os._exit(0)
        return super().step(action)


class HangsOnBlank(GuessNumberEnv):
    def step(self, action):
        if isinstance(action, str) and action and not action.strip():
            while True:  # never answers, and ignores signals it might be sent
                time.sleep(1)
        return super().step(action)


class StringRewardLater(GuessNumberEnv):
    # No players, so nothing adds the rewards up; a string reward from the second turn on, where the
    # hostile inputs (one step each) never look.
    def expert_action(self):
        raise NotImplementedError

    def random_action(self, rng):
        raise NotImplementedError

    def step(self, action):
        messages, reward, terminated, truncated, info = super().step(action)
        if self.turn >= 2:
            reward, info["format_error"] = str(reward), None  # read as a reply: no penalty is charged on it
        return messages, reward, terminated, truncated, info


envs.register("exits-mid-battery-v0", ExitsMidBattery)
envs.register("hard-exits-mid-battery-v0", HardExitsMidBattery)
envs.register("hangs-on-blank-v0", HangsOnBlank)
envs.register("string-reward-later-v0", StringRewardLater)
"""


def _check(tmp_path, env_id: str, *extra: str) -> subprocess.CompletedProcess:
    (tmp_path / "hostile_envs.py").write_text(HOSTILE)
    argv = [sys.executable, "-m", "envs", "check", env_id, "--import", "hostile_envs", "--seeds", "1", *extra]
    return subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=300)


def _line(proc: subprocess.CompletedProcess, name: str) -> str:
    return next(line for line in proc.stdout.splitlines() if line[6:].startswith(name))


def test_sys_exit_0_mid_battery_is_no_pass(tmp_path):
    proc = _check(tmp_path, "exits-mid-battery-v0")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    hostile = _line(proc, "hostile inputs")
    assert hostile.startswith("FAIL") and "ended the check's process (exit status 0)" in hostile
    assert _line(proc, "random").startswith("SKIP  random          not run: the battery stopped at hostile")
    assert proc.stdout.splitlines()[-1] == "exits-mid-battery-v0: 3 passed, 1 failed, 2 skipped"


def test_os_exit_0_mid_battery_is_no_pass(tmp_path):
    proc = _check(tmp_path, "hard-exits-mid-battery-v0")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "ended the check's process (exit status 0)" in _line(proc, "hostile inputs")


def test_a_call_that_never_answers_fails_at_the_deadline(tmp_path):
    proc = _check(tmp_path, "hangs-on-blank-v0", "--call-timeout", "3")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert _line(proc, "hostile inputs") == (
        "FAIL  hostile inputs  step gave no answer within 3 s (--call-timeout); stopped"
    )


def test_a_string_reward_fails_wherever_it_is_returned(tmp_path):
    proc = _check(tmp_path, "string-reward-later-v0")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    determinism = _line(proc, "determinism")
    assert determinism.startswith("FAIL") and "the reward is '0.0' (str), not a finite number" in determinism
    # gymnasium's checker only warns about such a reward: here it fails too.
    assert _line(proc, "gymnasium").startswith("FAIL")


def test_every_battery_says_it_is_no_proof(tmp_path):
    proc = _check(tmp_path, "guess-number-v0")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stderr.strip().startswith("note: a battery is not a proof")
