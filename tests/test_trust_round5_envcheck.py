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


IMPORT_RECORDS = """\
import os

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "imported_in.txt"), "a") as fh:
    fh.write(f"{os.getpid()}\\n")
if os.environ.get("EXIT_AT_IMPORT"):
    os._exit(0)
import envs
from envs.games.guess_number import GuessNumberEnv

envs.register("from-import-v0", GuessNumberEnv)
"""


def _check_import(tmp_path, env_id: str, module: str = "records_import", **env: str):
    import os

    (tmp_path / "records_import.py").write_text(IMPORT_RECORDS)
    argv = [sys.executable, "-m", "envs", "check", env_id, "--import", module, "--seeds", "1"]
    proc = subprocess.Popen(
        argv,
        cwd=tmp_path,
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out, err = proc.communicate(timeout=300)
    written = tmp_path / "imported_in.txt"
    pids = [int(p) for p in written.read_text().split()] if written.exists() else []
    return proc, out, err, pids


def test_check_imports_the_users_module_only_in_its_child(tmp_path):
    """Before, `envs check --import M` imported M in the checking process too: its code ran where no
    deadline or exit check holds."""
    proc, out, err, pids = _check_import(tmp_path, "from-import-v0")
    assert proc.returncode == 0, out + err
    assert pids and proc.pid not in pids


def test_a_module_that_exits_at_import_is_no_pass(tmp_path):
    """Before, `os._exit(0)` at import ended the checking process itself: exit status 0, nothing shown."""
    proc, out, err, _ = _check_import(tmp_path, "from-import-v0", EXIT_AT_IMPORT="1")
    assert proc.returncode == 1, out + err
    assert "ended the check's process (exit status 0)" in out


def test_a_missing_module_or_id_is_one_line_and_exit_2(tmp_path):
    proc, out, err, _ = _check_import(tmp_path, "from-import-v0", module="no_such_module_here")
    assert (
        proc.returncode == 2 and "--import no_such_module_here" in err and len(err.strip().splitlines()) == 1
    )
    proc, out, err, _ = _check_import(tmp_path, "not-registered-v0")
    assert proc.returncode == 2 and "check not-registered-v0" in err and len(err.strip().splitlines()) == 1
