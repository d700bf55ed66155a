"""code-sandbox-v0: bundled problems (every reference passes), grading, budget, hostile submissions."""

import asyncio
import json
from collections import Counter

import pytest
from gymnasium.utils.env_checker import check_env

import envs
from envs.code.grader import grade
from envs.code.problems import ProblemFileError, bundled_problems, load_problems


def call(name, **arguments):
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


def submit(env, code):
    return env.step(call("submit", code=code))


@pytest.fixture(scope="module")
def sandbox():
    from tools.sandbox import LocalSandbox

    return LocalSandbox()


def test_bundled_set_has_tiers_examples_and_references():
    problems = bundled_problems()
    tiers = Counter(p.tier for p in problems)
    assert len(problems) >= 60 and set(tiers) == {"easy", "medium", "hard"} and min(tiers.values()) >= 15
    assert len({p.id for p in problems}) == len(problems)
    for p in problems:
        assert p.reference and p.examples and len(p.tests) >= 3, p.id
        assert not set(map(str, p.tests)) & set(map(str, p.examples)), p.id


@pytest.mark.slow
def test_every_reference_passes_all_its_tests(sandbox):
    async def run_all():
        gate = asyncio.Semaphore(4)

        async def one(p):
            async with gate:
                return p, await grade(sandbox, p, p.reference, [*p.tests, *p.examples])

        return await asyncio.gather(*(one(p) for p in bundled_problems()))

    failed = {p.id: r.outcomes for p, r in asyncio.run(run_all()) if r.fraction != 1.0}
    assert not failed


def test_check_env():
    env = envs.make("code-sandbox-v0")
    check_env(env.unwrapped)
    check_env(env)
    assert [s["function"]["name"] for s in env.unwrapped.tool_schemas] == ["python", "submit"]


def test_hidden_tests_never_reach_the_agent():
    env = envs.make("code-sandbox-v0")
    for seed in range(20):
        messages, info = env.reset(seed=seed)
        shown = "\n".join(m["content"] for m in messages) + json.dumps([info, env.unwrapped.tool_schemas])
        for test in env.unwrapped.problem.tests:
            if isinstance(test, dict):  # how an input/output pair would be rendered
                test = f"Input:\n{test['input'].rstrip()}\nOutput:\n{test['output'].rstrip()}"
            assert test not in shown


def test_correct_submission_scores_one_and_wrong_less():
    env = envs.make("code-sandbox-v0", binary_reward=False)
    env.reset(seed=0, options={"problem_id": "fizzbuzz"})
    _, reward, terminated, _, info = submit(env, env.unwrapped.problem.reference)
    assert terminated and reward == 1.0 and info["success"] and info["tests_passed"] == info["tests_total"]
    env.reset(seed=0, options={"problem_id": "fizzbuzz"})
    half = "def fizzbuzz(n):\n    return [str(i) for i in range(1, n + 1)]\n"
    messages, reward, terminated, _, info = submit(env, half)
    assert terminated and 0 < reward < 1 and not info["success"]
    assert "WrongAnswer" in messages[-1]["content"] and "assert" not in messages[-1]["content"]
    env.reset(seed=0, options={"problem_id": "fizzbuzz"})
    assert submit(env, "def fizzbuzz(n):\n    return None\n")[1] == 0.0


def test_binary_reward_by_default_and_program_problems():
    env = envs.make("code-sandbox-v0")
    env.reset(seed=0, options={"problem_id": "star-triangle"})
    assert "Input:" in env.unwrapped.transcript[-1]["content"]
    assert submit(env, "n = int(input())\nfor i in range(1, n + 1):\n    print('*' * i)\n")[1] == 1.0
    env.reset(seed=0, options={"problem_id": "star-triangle"})
    # Right except for n = 0: binary reward gives nothing for a partial pass.
    assert (
        submit(env, "n = int(input())\nprint('*')\nfor i in range(2, n + 1):\n    print('*' * i)\n")[1] == 0.0
    )


def test_python_runs_are_budgeted_and_failures_penalised():
    env = envs.make("code-sandbox-v0", max_runs=2, failed_run_penalty=0.05)
    env.reset(seed=0)
    messages, reward, *_ = env.step(call("python", code="print(6 * 7)"))
    assert (
        messages[0]["content"].startswith("42")
        and "1 python run left" in messages[0]["content"]
        and reward == 0.0
    )
    messages, reward, *_ = env.step(call("python", code="raise ValueError('boom')"))
    assert "ValueError" in messages[0]["content"] and reward == pytest.approx(-0.05)
    messages, reward, terminated, truncated, _ = env.step(call("python", code="print(1)"))
    assert "used up" in messages[0]["content"] and not terminated and not truncated
    _, reward, terminated, _, info = env.step(env.expert_action())
    assert terminated and info["success"] and info["python_runs"] == 2


def test_code_block_submission_and_option_off():
    env = envs.make("code-sandbox-v0")
    env.reset(seed=0, options={"problem_id": "factorial"})
    code = env.unwrapped.problem.reference
    _, reward, terminated, _, _ = env.step(f"Here it is:\n```python\n{code}```")
    assert terminated and reward == 1.0
    env = envs.make("code-sandbox-v0", submit_code_blocks=False)
    env.reset(seed=0, options={"problem_id": "factorial"})
    _, reward, terminated, _, info = env.step(f"```python\n{code}```")
    assert not terminated and info["format_error"]


HOSTILE = {
    "exit early": "import os\nos._exit(0)\n",
    "sys.exit": "import sys\nsys.exit(0)\n",
    "infinite loop": "def fizzbuzz(n):\n    while True:\n        pass\n",
    "fork bomb": "import os\ndef fizzbuzz(n):\n    while True:\n        os.fork()\n",
    "memory hog": "def fizzbuzz(n):\n    x = bytearray(1 << 34)\n",
    "print the nonce format": "print('@@turngym-report-0@@[null, null]')\ndef fizzbuzz(n):\n    return []\n",
    "delete files": "import shutil, os\nshutil.rmtree(os.getcwd(), ignore_errors=True)\ndef fizzbuzz(n):\n    return []\n",
    "huge output": "print('x' * 50_000_000)\n",
    "kill parent": "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n",
    "syntax error": "def fizzbuzz(n) return\n",
    "close stdout": "import os\nos.close(1)\nos.close(2)\n",
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_submissions_are_contained(name):
    env = envs.make("code-sandbox-v0", per_test_timeout_s=1.0, run_timeout_s=5.0)
    env.reset(seed=0, options={"problem_id": "fizzbuzz"})
    messages, reward, terminated, _, info = submit(env, HOSTILE[name])
    assert terminated and reward == 0.0 and info["success"] is False, (name, messages)
    # The env and the machine are fine afterwards: the next episode is graded normally.
    env.reset(seed=0, options={"problem_id": "fizzbuzz"})
    assert submit(env, env.unwrapped.problem.reference)[1] == 1.0


def test_seed_determinism_and_tiers():
    env = envs.make("code-sandbox-v0", tier="hard")
    ids = [env.reset(seed=s)[1]["problem_id"] for s in range(6)]
    assert ids == [env.reset(seed=s)[1]["problem_id"] for s in range(6)] and len(set(ids)) > 1
    assert all(env.reset(seed=s)[1]["tier"] == "hard" for s in range(6))
    assert env.reset(seed=0, options={"tier": "easy"})[1]["tier"] == "easy"


def test_users_jsonl_problems(tmp_path):
    path = tmp_path / "mine.jsonl"
    rows = [
        {
            "prompt": "Write double(x) returning 2*x.",
            "tests": ["assert double(2) == 4", "assert double(-1) == -2"],
            "reference": "def double(x):\n    return 2 * x\n",
        },
        {
            "id": "echo",
            "prompt": "Print the input line.",
            "tests": [{"input": "hi\n", "output": "hi\n"}, {"input": "yo\n", "output": "yo\n"}],
        },
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    env = envs.make("code-sandbox-v0", problems=str(path))
    _, info = env.reset(seed=0, options={"index": 0})
    assert info["problem_id"] == "mine-1"
    assert env.step(env.expert_action())[1] == 1.0
    env.reset(seed=0, options={"problem_id": "echo"})
    with pytest.raises(NotImplementedError, match="no reference"):
        env.unwrapped.expert_action()
    assert submit(env, "print(input())")[1] == 1.0


@pytest.mark.parametrize(
    "line, problem",
    [
        ("{not json", "not valid JSON"),
        ('{"tests": ["assert 1"]}', "`prompt` must be a non-empty string"),
        ('{"prompt": "p", "tests": []}', "`tests` must be a non-empty list"),
        ('{"prompt": "p", "tests": [5]}', "a test must be"),
        ('{"prompt": "p", "tests": ["assert f(1) == 2", {"input": "", "output": ""}]}', "mix of function"),
        ('{"prompt": "p", "tests": ["assert f(1) == 2", "assert f(2) == 2"]}', "constant answer would pass"),
        ('{"prompt": "p", "tests": ["assert f(1) == 2"]}', "constant answer would pass"),
        ('{"prompt": "p", "tests": ["assert 1", "assert 2"]}', "unsupported test"),
        ('{"prompt": "p", "tests": ["assert f(1) > 2", "assert f(2) == 3"]}', "unsupported test"),
        ('{"prompt": "p", "tests": ["assert f(open(1)) == 2", "assert f(2) == 3"]}', "uses names other"),
        ('{"prompt": "p", "tests": ["assert f(1) == 2", "assert g(2) == 3"]}', "more than one function"),
    ],
)
def test_bad_problem_files_name_the_line(tmp_path, line, problem):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"prompt": "ok", "tests": ["assert f(1) == 1", "assert f(2) == 4"]}\n' + line + "\n")
    with pytest.raises(ProblemFileError, match=f"bad.jsonl:2: .*{problem}"):
        load_problems(path)


def test_sandbox_option_validation():
    with pytest.raises(ValueError, match="sandbox_endpoint"):
        envs.make("code-sandbox-v0", sandbox="fusion")
    with pytest.raises(ValueError, match="sandbox must be"):
        envs.make("code-sandbox-v0", sandbox="docker")


@pytest.mark.slow
def test_fusion_sandbox_when_configured():
    """The same env graded through a SandboxFusion-compatible server on loopback."""
    from tools.sandbox.serve import spawn_server
    from turngym.serving.loopback_server import stop_server

    url, server = spawn_server()
    try:
        env = envs.make("code-sandbox-v0", sandbox="fusion", sandbox_endpoint=url)
        env.reset(seed=0, options={"problem_id": "gcd"})
        messages, *_ = env.step(call("python", code="print(2 ** 10)"))
        assert messages[0]["content"].startswith("1024")
        assert env.step(env.expert_action())[1] == 1.0
    finally:
        stop_server(server)


def test_code_env_refuses_to_run_unisolated_unless_asked(monkeypatch, caplog):
    monkeypatch.setenv("PATH", "/nonexistent")  # no bubblewrap to be found
    with pytest.raises(RuntimeError, match="isolation='none'"):
        envs.make("code-sandbox-v0")
    env = envs.make("code-sandbox-v0", isolation="none")
    assert env.unwrapped.sandbox.isolation == "none"


def test_cancelled_sandbox_call_kills_its_process():
    """A tool call cut by the turn's time budget must not leave its program running."""
    import subprocess
    import time

    from tools.sandbox import LocalSandbox

    marker = "sleep 25.7781"  # the program becomes this command line, so pgrep can see it

    def alive():
        return subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout.split()

    async def cut():
        code = "import os\nos.execv('/bin/sleep', ['sleep', '25.7781'])"
        task = asyncio.create_task(LocalSandbox(timeout_s=30).arun(code))
        for _ in range(50):
            await asyncio.sleep(0.1)
            if alive():
                break
        assert alive(), "the program never started"
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cut())
    time.sleep(0.5)
    assert alive() == []
