"""repo-fix-v0: generated repositories, the expert on every difficulty, tools, determinism, hostile actions."""

from __future__ import annotations

import json

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import envs
from envs.code.cases import same_value
from envs.repo_fix.catalogue import MODULES, call_in_process, check_catalogue
from envs.repo_fix.generator import generate
from envs.repo_fix.repo_files import MAX_FILE_CHARS, MAX_FILES, RepoError, RepoFiles, check_path
from envs.repo_fix.trusted_loader import load_modules


def call(name: str, **arguments) -> dict:
    """An assistant message with one tool call."""
    fn = {"name": name, "arguments": json.dumps(arguments)}
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "c0", "type": "function", "function": fn}],
    }


def raw_call(name, arguments) -> dict:
    fn = {"name": name, "arguments": arguments}
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "c0", "type": "function", "function": fn}],
    }


def play_expert(env, seed: int, difficulty: str | None = None):
    options = {"difficulty": difficulty} if difficulty else None
    env.reset(seed=seed, options=options)
    total, info = 0.0, {}
    for turn in range(20):
        _, reward, terminated, truncated, info = env.step(env.unwrapped.expert_action())
        total += reward
        if terminated or truncated:
            return info, total, turn + 1
    raise AssertionError("the expert did not finish")


def _modules_of(files: dict[str, str], package: str) -> dict:
    names = [
        p.split("/")[1][:-3] for p in files if p.startswith(f"{package}/") and p != f"{package}/__init__.py"
    ]
    order = [m for m in MODULES if m in names]
    return load_modules(tuple((m, files[f"{package}/{m}.py"]) for m in order))


# ----- the catalogue and the generator (in process, no sandbox) -----------------------------------------
def test_catalogue_is_sound():
    assert check_catalogue() == []


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_generated_repos_hold_what_the_difficulty_promises(difficulty):
    bugs_wanted = {"easy": 1, "medium": 1, "hard": 2}[difficulty]
    for seed in range(40):
        task = generate(np.random.default_rng(seed), difficulty)
        assert len(task.bugs) == bugs_wanted and len({b.module for b in task.bugs}) == bugs_wanted
        # Every bug makes a visible test fail, so the agent can see it.
        caught = {id(b) for bugs in task.catches.values() for b in bugs}
        assert all(id(b) in caught for b in task.bugs), (difficulty, seed)
        visible = "".join(t for p, t in task.files.items() if p.startswith("tests/"))
        for bug in task.bugs:
            own_test = f"def test_{bug.function}():" in task.files.get(f"tests/test_{bug.module}.py", "")
            assert own_test == (difficulty == "easy"), (difficulty, seed, bug)
        # The fixed repository computes every hidden expected value; the given one fails some.
        fixed = _modules_of(task.fixed_files, task.package)
        broken = _modules_of(task.files, task.package)
        for case in task.hidden:
            ok, got = call_in_process(fixed, case.module, case.function, case.args)
            assert ok and same_value(got, case.expected)
            assert f"{case.function}({', '.join(map(repr, case.args))})" not in visible  # fresh inputs
        for bug in task.bugs:
            wrong = [
                c
                for c in task.hidden
                if (c.module, c.function) == (bug.module, bug.function)
                and not same_value(call_in_process(broken, c.module, c.function, c.args)[1], c.expected)
            ]
            assert len(wrong) >= 2, (difficulty, seed, bug)


def test_same_seed_same_repository_and_seeds_differ():
    a = generate(np.random.default_rng(5), "hard")
    b = generate(np.random.default_rng(5), "hard")
    assert a.files == b.files and a.hidden == b.hidden and a.bugs == b.bugs
    assert generate(np.random.default_rng(6), "hard").files != a.files
    packages = {generate(np.random.default_rng(s), "easy").package for s in range(20)}
    bugs = {generate(np.random.default_rng(s), "easy").bugs[0] for s in range(40)}
    assert len(packages) > 3 and len(bugs) > 10


# ----- the env -----------------------------------------------------------------------------------------
@pytest.mark.filterwarnings("ignore:.*different from the unwrapped version")
def test_check_env():
    env = envs.make("repo-fix-v0")
    check_env(env.unwrapped, skip_render_check=False)
    check_env(env)
    env.close()


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_expert_fixes_the_repository(difficulty):
    env = envs.make("repo-fix-v0")
    for seed in range(4):
        info, total, turns = play_expert(env, seed, difficulty)
        assert info["success"] is True and total == 1.0 and info["tests_passed"] == info["tests_total"]
        assert turns == 4  # run the tests, fix, rerun, submit
    env.close()


@pytest.mark.slow
@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_expert_success_rate_over_many_seeds(difficulty):
    env = envs.make("repo-fix-v0")
    wins = sum(play_expert(env, seed, difficulty)[0]["success"] for seed in range(100, 140))
    assert wins == 40
    env.close()


def test_same_seed_same_episode():
    def transcript(seed):
        env = envs.make("repo-fix-v0", difficulty="medium")
        out = [env.reset(seed=seed)]
        for _ in range(20):
            step = env.step(env.unwrapped.expert_action())
            out.append(step[:4])
            if step[2] or step[3]:
                break
        env.close()
        return out

    assert transcript(9) == transcript(9)
    assert transcript(9)[0] != transcript(10)[0]


def test_reset_options_and_constructor_arguments_are_checked():
    env = envs.make("repo-fix-v0")
    _, info = env.reset(seed=0, options={"difficulty": "hard"})
    assert info["difficulty"] == "hard"
    with pytest.raises(ValueError, match="difficulty"):
        env.reset(seed=0, options={"difficulty": "nightmare"})
    with pytest.raises(ValueError, match="valid options"):
        env.reset(seed=0, options={"bug": 1})
    with pytest.raises(ValueError, match="difficulty"):
        envs.make("repo-fix-v0", difficulty="nightmare")
    with pytest.raises(ValueError, match="sandbox"):
        envs.make("repo-fix-v0", sandbox="docker")


def test_shell_changes_to_existing_files_are_kept_new_files_are_not():
    env = envs.make("repo-fix-v0")
    env.reset(seed=1)
    game = env.unwrapped
    messages, *_ = env.step(
        call("shell", command="echo extra >> README.md; echo hi > NEW.txt; cat README.md")
    )
    assert "extra" in messages[-1]["content"] and "[README.md was changed]" in messages[-1]["content"]
    assert game.repo.files["README.md"].endswith("extra\n") and "NEW.txt" not in game.repo.files
    messages, *_ = env.step(call("shell", command="ls NEW.txt"))
    assert "No such file" in messages[-1]["content"]
    messages, *_ = env.step(call("edit", path="notes/NEW.txt", new="kept\n"))
    messages, *_ = env.step(call("shell", command="cat notes/NEW.txt"))
    assert "kept" in messages[-1]["content"]
    messages, *_ = env.step(call("read", path="notes/NEW.txt"))
    assert messages[-1]["content"].strip() == "1 kept"
    messages, *_ = env.step(call("read", path="."))
    assert "notes/NEW.txt (1 lines)" in messages[-1]["content"]
    # The usual way an agent patches a file from the shell: sed -i (a new file renamed over the old one).
    messages, *_ = env.step(call("shell", command="sed -i 's/kept/patched/' notes/NEW.txt"))
    assert (
        game.repo.files["notes/NEW.txt"] == "patched\n"
        and "[notes/NEW.txt was changed]" in messages[-1]["content"]
    )
    env.close()


def test_edit_replaces_exactly_one_occurrence():
    env = envs.make("repo-fix-v0")
    env.reset(seed=2)
    game = env.unwrapped
    path = f"{game.task.package}/__init__.py"
    before = dict(game.repo.files)
    for args, problem in [
        ({"path": path, "old": "no such text", "new": "x"}, "does not occur"),
        ({"path": "run_tests.py", "old": "\n", "new": "x"}, "occurs"),
        ({"path": path, "old": "", "new": "x"}, "empty"),
        ({"path": "missing.py", "old": "a", "new": "b"}, "no file"),
    ]:
        messages, reward, terminated, truncated, _ = env.step(call("edit", **args))
        assert problem in messages[-1]["content"] and not terminated and reward == 0.0
    assert game.repo.files == before
    messages, *_ = env.step(call("edit", path=path, old='"""The', new='"""A'))
    assert game.repo.files[path].startswith('"""A') and "replaced 1" in messages[-1]["content"]


def test_repository_paths_are_checked_as_text():
    for bad in [
        "../x.py",
        "/etc/passwd",
        "pkg/../../x",
        "a\\b",
        "",
        "x/./y",
        "x//y",
        "a\x00b",
        ".hidden/../../x",
        "-rf",
        "a/" * 10 + "b",
        "x" * 200,
        5,
        None,
    ]:
        with pytest.raises(RepoError):
            check_path(bad)
    assert check_path("./pkg/mod.py") == "pkg/mod.py"
    repo = RepoFiles({"pkg/mod.py": "x = 1\n"})
    with pytest.raises(RepoError, match="directory"):
        repo.write("pkg", "x")
    with pytest.raises(RepoError, match="is a file"):
        repo.write("pkg/mod.py/inner.py", "x")
    with pytest.raises(RepoError, match="limited"):
        repo.write("big.py", "x" * (MAX_FILE_CHARS + 1))
    for i in range(MAX_FILES - 1):
        repo.write(f"f{i}.py", "")
    with pytest.raises(RepoError, match="files"):
        repo.write("one_more.py", "")


# ----- hostile actions ---------------------------------------------------------------------------------
MALFORMED = [
    raw_call("shell", "{not json"),
    raw_call("shell", {"command": 5}),
    raw_call("shell", {"command": ["ls"]}),
    raw_call("shell", {}),
    raw_call("shell", {"command": "ls", "sudo": True}),
    raw_call("shell", {"command": "   "}),
    raw_call("shell", {"command": "x" * 9000}),
    raw_call("edit", {"path": 5, "new": "x"}),
    raw_call("edit", {"path": "a.py"}),
    raw_call("edit", {"path": "a.py", "old": 3, "new": "x"}),
    raw_call("edit", {"path": ["a.py"], "new": "x"}),
    raw_call("edit", {"path": "../../etc/cron.d/x", "new": "x"}),
    raw_call("edit", {"path": "/etc/passwd", "new": "x"}),
    raw_call("edit", {"path": "README.md/../../x", "new": "x"}),
    raw_call("read", {"path": "../../etc/passwd"}),
    raw_call("read", {"path": "/etc/passwd"}),
    raw_call("read", {"path": "README.md", "start": 0}),
    raw_call("read", {"path": "README.md", "start": "a"}),
    raw_call("submit", {"now": True}),
    raw_call("submit", "[1, 2]"),
    raw_call("no_such_tool", {}),
    raw_call("Shell", {"command": "ls"}),
    "<tool_call>\n{not json}\n</tool_call>",
    "I think the bug is in money.py",
    "```python\nprint(1)\n```",
]


def test_malformed_calls_change_nothing_and_never_end_the_episode():
    env = envs.make("repo-fix-v0", max_turns=10_000)
    env.reset(seed=4)
    game = env.unwrapped
    before = dict(game.repo.files)
    for action in MALFORMED:
        messages, reward, terminated, truncated, _ = env.step(action)
        assert env.observation_space.contains(messages) and messages, action
        assert not terminated and not truncated and reward <= 0.0, action  # a format penalty at most
        assert "root:" not in messages[-1]["content"]
    assert game.repo.files == before
    info, total, _ = play_expert_from_here(env)
    assert info["success"] is True and total == 1.0


def play_expert_from_here(env):
    total, info = 0.0, {}
    for turn in range(20):
        _, reward, terminated, truncated, info = env.step(env.unwrapped.expert_action())
        total += reward
        if terminated or truncated:
            return info, total, turn + 1
    raise AssertionError("the expert did not finish")


HOSTILE_COMMANDS = {
    "fork bomb": ":(){ :|:& };:",
    "spin": "while :; do :; done",
    "sleep": "sleep 60",
    "huge output": "yes 0123456789 | head -c 50000000",
    "huge file": "head -c 30000000 /dev/zero | tr '\\0' x > README.md",
    "binary file": "head -c 4096 /dev/urandom > README.md",
    "host files": "cat /etc/shadow /etc/passwd /root/.bashrc; ls /work /root /home",
    "escaping symlink": "ln -sf /etc/passwd README.md; ln -sf /proc/1/environ run_tests.py",
    "network": "python3 -c \"import socket; socket.create_connection(('1.1.1.1', 80), timeout=2)\"",
    "memory": 'python3 -c "b = bytearray(2 << 30)"',
    "kill everything": "kill -9 -1",
}
SAID = {
    "spin": "timed out",
    "sleep": "timed out",
    "huge output": "output truncated",
    "huge file": "too large to keep; the old one stays",
    "binary file": "not UTF-8 text; the old one stays",
    "escaping symlink": "not a regular file in the repository any more; its old content stays",
    "memory": "MemoryError",
}


@pytest.mark.parametrize("name", sorted(HOSTILE_COMMANDS))
def test_hostile_shell_commands_are_contained(name):
    env = envs.make("repo-fix-v0", run_timeout_s=3.0, max_turns=10_000)
    env.reset(seed=5)
    game = env.unwrapped
    before = dict(game.repo.files)
    messages, reward, terminated, truncated, _ = env.step(call("shell", command=HOSTILE_COMMANDS[name]))
    text = messages[-1]["content"]
    assert env.observation_space.contains(messages) and not terminated and reward == 0.0
    assert len(text) < 8000, len(text)
    assert SAID.get(name, "") in text, text[-400:]
    assert "root:x:0:0" not in text and "root:" not in "".join(game.repo.files.values())
    assert game.repo.files == before  # no content of a link, no binary or oversized file is kept
    info, total, _ = play_expert_from_here(env)  # and the episode goes on
    assert info["success"] is True
    env.close()


def test_the_sandbox_sees_no_host_files_and_no_hidden_tests():
    env = envs.make("repo-fix-v0")
    env.reset(seed=6)
    probe = (
        "ls / ; ls /work 2>&1; find / -name 'generator.py' -path '*repo_fix*' 2>/dev/null | head; echo done"
    )
    messages, *_ = env.step(call("shell", command=probe))
    text = messages[-1]["content"]
    assert "No such file" in text and "repo_fix" not in text and text.rstrip().endswith("[exit code 0]")
    env.close()


def test_turn_limit_ends_unsubmitted_episodes_without_reward_and_step_after_end_is_refused():
    env = envs.make("repo-fix-v0", max_turns=2)
    env.reset(seed=7)
    env.step(call("read", path="."))
    _, reward, terminated, truncated, info = env.step(call("read", path="README.md"))
    assert truncated and reward == 0.0 and "success" not in info
    env = envs.make("repo-fix-v0")
    env.reset(seed=7)
    _, reward, terminated, _, info = env.step(call("submit"))
    assert terminated and reward == 0.0 and info["success"] is False
    messages, reward, *_ = env.step(call("submit"))
    assert reward == 0.0 and messages
