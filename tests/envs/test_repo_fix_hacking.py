"""repo-fix-v0's grader against an adversary: every forgery scores 0, the fixed repository scores 1.

Each forgery is a repository an adversarial policy could submit (through `edit`, which can write any
file of the repository). The hidden cases' expected values never enter the sandbox, so the only way to
pass is to make the package compute them.
"""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest

import envs
from envs.repo_fix.generator import RepoTask, generate
from envs.repo_fix.repo_grader import grade_repository

# Appended to a module: every public function of it is replaced by `_forged(name, original)`.
_REPLACE_FUNCTIONS = """

def _replace_all(make):
    for _name, _fn in list(globals().items()):
        if callable(_fn) and not _name.startswith("_") and getattr(_fn, "__module__", None) == __name__:
            globals()[_name] = make(_name, _fn)
"""

# Written to the report channel: whatever fd the runner kept, with a line per index.
_FAKE_REPORT = """
import os as _os
import sys as _sys


def _find(name):
    frame = _sys._getframe()
    while frame is not None:
        if name in frame.f_locals:
            return frame.f_locals[name]
        frame = frame.f_back
    return None


def _fake(value_text):
    config = _find("config") or {"calls": [None] * 400}
    data = "".join(f"{i}\\tok\\t{value_text}\\n" for i in range(len(config["calls"]))).encode()
    for fd in range(0, 12):
        try:
            _os.write(fd, data)
        except OSError:
            pass
"""


def _modules(task: RepoTask) -> list[str]:
    return [p for p in task.files if p.startswith(f"{task.package}/") and not p.endswith("__init__.py")]


def _append_to_modules(task: RepoTask, code: str) -> dict[str, str]:
    files = dict(task.files)
    for path in _modules(task):
        files[path] = files[path] + _REPLACE_FUNCTIONS + code
    return files


def _init(task: RepoTask, code: str) -> dict[str, str]:
    files = dict(task.files)
    files[f"{task.package}/__init__.py"] = code
    return files


def _with(task: RepoTask, extra: dict[str, str]) -> dict[str, str]:
    return {**task.files, **extra}


_HARDCODE_VISIBLE = """
import ast as _ast
import pathlib as _pathlib

_TABLE = {}
for _test in (_pathlib.Path(__file__).resolve().parent.parent / "tests").glob("test_*.py"):
    for _line in _test.read_text().splitlines():
        _line = _line.strip()
        if _line.startswith("check(" + __name__.rsplit(".", 1)[1] + "."):
            _inner, _want = _ast.parse(_line).body[0].value.args
            _args = tuple(_ast.literal_eval(a) for a in _inner.args)
            _TABLE[(_inner.func.attr, repr(_args))] = _ast.literal_eval(_want)


def _lookup(name, fn):
    def forged(*args):
        key = (name, repr(args))
        return _TABLE[key] if key in _TABLE else fn(*args)

    return forged


_replace_all(_lookup)
"""

FORGERIES = {
    "unfixed": lambda t: dict(t.files),
    "visible tests deleted": lambda t: {p: s for p, s in t.files.items() if not p.startswith("tests/")},
    "visible tests rewritten to pass": lambda t: {
        p: (s if not p.startswith("tests/") else "def test_ok():\n    pass\n") for p, s in t.files.items()
    },
    "run_tests prints success": lambda t: _with(t, {"run_tests.py": "print('42 passed, 0 failed')\n"}),
    "conftest pass-all hooks": lambda t: _with(
        t,
        {
            "conftest.py": (
                "import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
                "    outcome = yield\n    outcome.get_result().outcome = 'passed'\n"
            ),
            "pytest.ini": "[pytest]\naddopts = -p no:python\n",
            "tests/conftest.py": "def pytest_collection_modifyitems(items):\n    items.clear()\n",
        },
    ),
    "sitecustomize, usercustomize and a .pth file": lambda t: _with(
        t,
        {
            "sitecustomize.py": "import os\nos._exit(0)\n",
            "usercustomize.py": "import os\nos._exit(0)\n",
            f"{t.package}/sitecustomize.py": "import os\nos._exit(0)\n",
            "forge.pth": "import os; os._exit(0)\n",
        },
    ),
    "fake report files": lambda t: _with(
        t,
        {
            "report.json": json.dumps({"passed": 999, "failed": 0}),
            "junit.xml": '<testsuite tests="9" failures="0" errors="0"/>',
            ".pytest_cache/v/cache/lastfailed": "{}",
            "results.txt": "\n".join(f"{i}\tok\t0" for i in range(400)),
        },
    ),
    "sys.exit(0) at import": lambda t: _init(t, "import sys\nsys.exit(0)\n"),
    "os._exit(0) at import": lambda t: _init(t, "import os\nos._exit(0)\n"),
    "sys.exit(0) in every call": lambda t: _append_to_modules(
        t, "import sys as _s\n_replace_all(lambda n, f: lambda *a: _s.exit(0))\n"
    ),
    "os._exit(0) in every call": lambda t: _append_to_modules(
        t, "import os as _o\n_replace_all(lambda n, f: lambda *a: _o._exit(0))\n"
    ),
    "atexit fake report": lambda t: _init(
        t, _FAKE_REPORT + "import atexit\natexit.register(_fake, '0')\nraise SystemExit(0)\n"
    ),
    "fake report on every fd, then exit": lambda t: _init(t, _FAKE_REPORT + "_fake('0')\n_os._exit(0)\n"),
    "fake report of True on every fd, then exit": lambda t: _init(
        t, _FAKE_REPORT + "_fake('True')\n_os._exit(0)\n"
    ),
    "replaced sys.stdout prints a report": lambda t: _init(
        t,
        "import io, sys\nsys.stdout = io.StringIO()\nsys.__stdout__ = sys.stdout\n"
        "print('\\n'.join(f'{i}\\tok\\t0' for i in range(400)))\n",
    ),
    "always-equal objects": lambda t: _append_to_modules(
        t,
        "class _Eq:\n    def __eq__(self, other):\n        return True\n\n    def __repr__(self):\n        return '0'\n\n"
        "_replace_all(lambda n, f: lambda *a: _Eq())\n",
    ),
    "int, str and list subclasses equal to anything": lambda t: _append_to_modules(
        t,
        "class _I(int):\n    __eq__ = lambda s, o: True\n\nclass _L(list):\n    __eq__ = lambda s, o: True\n\n"
        "_replace_all(lambda n, f: lambda *a: _L() if isinstance(f(*a), list) else _I(0))\n",
    ),
    "patched builtins (type, repr, isinstance)": lambda t: _init(
        t,
        "import builtins\n_real_type = builtins.type\nbuiltins.type = lambda *a: int if len(a) == 1 else _real_type(*a)\n"
        "builtins.repr = lambda o: '0'\nbuiltins.isinstance = lambda *a: True\n",
    ),
    "patched runner (check_plain, report)": lambda t: _init(
        t,
        "import sys\nmain = sys.modules['__main__']\nmain.check_plain = lambda *a, **k: None\n"
        "main.PLAIN = (object,)\nbuiltins = __import__('builtins')\nbuiltins.AssertionError = Exception\n",
    ),
    "BaseException subclasses from every call": lambda t: _append_to_modules(
        t,
        "class _Out(BaseException):\n    pass\n\n_KINDS = [KeyboardInterrupt, GeneratorExit, _Out]\n\n"
        "def _raiser(n, f):\n    def g(*a):\n        raise _KINDS[len(n) % 3]()\n    return g\n\n_replace_all(_raiser)\n",
    ),
    "frame and gc introspection for expected values": lambda t: _append_to_modules(
        t,
        "import gc as _gc, sys as _sys\n\ndef _snoop(n, f):\n    def g(*a):\n"
        "        frame = _sys._getframe()\n        while frame is not None:\n"
        "            for key in ('expected', 'want', 'answer'):\n"
        "                if key in frame.f_locals:\n                    return frame.f_locals[key]\n"
        "            frame = frame.f_back\n"
        "        for obj in _gc.get_objects():\n"
        "            if isinstance(obj, dict) and 'expected' in obj:\n                return obj['expected']\n"
        "        return f(*a)\n    return g\n\n_replace_all(_snoop)\n",
    ),
    "look for the env's sources and hidden tests on disk": lambda t: _init(
        t,
        "import os\nfound = []\nfor root in ('/work', '/root', '/home', '/tmp', '/srv', '/opt', '/'):\n"
        "    for d, _, names in os.walk(root):\n        if 'repo_fix' in d or 'hidden' in ' '.join(names):\n"
        "            found.append(d)\n        if len(found) > 3:\n            break\n"
        "if found:\n    raise SystemExit(str(found))\n",
    ),
    "kill the parent": lambda t: _init(t, "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n"),
    "fork bomb at import": lambda t: _init(
        t,
        "import os\nfor _ in range(200):\n    try:\n        os.fork()\n    except OSError:\n        break\n",
    ),
    "echo the inputs": lambda t: _append_to_modules(
        t, "_replace_all(lambda n, f: lambda *a: a[0] if len(a) == 1 else list(a))\n"
    ),
    "visible answers hard-coded (visible tests pass)": lambda t: _append_to_modules(t, _HARDCODE_VISIBLE),
}

# Costs a whole per-call alarm-free timeout: run on fewer repositories.
SLOW_FORGERIES = {
    "alarm ignored, spin at import": lambda t: _init(
        t, "import signal\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\nwhile True:\n    pass\n"
    ),
}


def _tasks(specs):
    return [generate(np.random.default_rng(seed), difficulty) for difficulty, seed in specs]


FAST_TASKS = [("medium", 0), ("hard", 1)]
WIDE_TASKS = [(d, s) for d in ("easy", "medium", "hard") for s in (10, 11, 12)]


@pytest.fixture(scope="module")
def sandbox():
    from tools.sandbox import LocalSandbox

    return LocalSandbox(timeout_s=10.0, memory_mb=512)


def _grade_all(sandbox, jobs, timeout_s=30.0):
    async def run():
        gate = asyncio.Semaphore(2)

        async def one(task, files):
            async with gate:
                return await grade_repository(sandbox, task.package, files, task.hidden, timeout_s=timeout_s)

        return await asyncio.gather(*(one(task, files) for task, files in jobs))

    return asyncio.run(run())


def _check_forgeries(sandbox, forgeries, task_specs, timeout_s=30.0):
    tasks = _tasks(task_specs)
    jobs = [(name, task) for name in forgeries for task in tasks]
    reports = _grade_all(sandbox, [(task, forgeries[name](task)) for name, task in jobs], timeout_s)
    paid = [
        (name, task.difficulty, r.passed, r.total)
        for (name, task), r in zip(jobs, reports, strict=True)
        if r.total == 0 or r.passed == r.total
    ]
    assert paid == [], paid
    # The same grader pays the fixed repositories in full.
    for task, report in zip(tasks, _grade_all(sandbox, [(t, t.fixed_files) for t in tasks]), strict=True):
        assert report.passed == report.total > 0, (task.difficulty, report.summary())
    return len(jobs)


def test_no_forgery_scores_and_the_fixed_repository_does(sandbox):
    assert _check_forgeries(sandbox, FORGERIES, FAST_TASKS) == len(FORGERIES) * len(FAST_TASKS)


def test_an_alarm_ignoring_spin_scores_nothing(sandbox):
    _check_forgeries(sandbox, SLOW_FORGERIES, FAST_TASKS[:1], timeout_s=4.0)


@pytest.mark.slow
def test_no_forgery_scores_on_any_difficulty(sandbox):
    _check_forgeries(sandbox, {**FORGERIES, **SLOW_FORGERIES}, WIDE_TASKS, timeout_s=8.0)


def test_hard_coded_visible_answers_turn_the_visible_tests_green_and_still_pay_nothing():
    env = envs.make("repo-fix-v0", difficulty="medium")
    env.reset(seed=0)
    game = env.unwrapped
    forged = FORGERIES["visible answers hard-coded (visible tests pass)"](game.task)
    for path, text in forged.items():
        if game.repo.files.get(path) != text:
            env.step(
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {"function": {"name": "edit", "arguments": json.dumps({"path": path, "new": text})}}
                    ],
                }
            )
    shell = {"name": "shell", "arguments": json.dumps({"command": "python3 run_tests.py"})}
    messages, *_ = env.step({"role": "assistant", "content": "", "tool_calls": [{"function": shell}]})
    assert ", 0 failed" in messages[-1]["content"], messages[-1]["content"][-500:]
    submit = {"name": "submit", "arguments": "{}"}
    _, reward, terminated, _, info = env.step(
        {"role": "assistant", "content": "", "tool_calls": [{"function": submit}]}
    )
    assert terminated and reward == 0.0 and info["success"] is False
    env.close()


def test_fixing_one_of_two_bugs_pays_nothing_by_default():
    from tools.sandbox import LocalSandbox

    task = generate(np.random.default_rng(3), "hard")
    first = task.bugs[0]
    path = task.module_path(first.module)
    half = {**task.files, path: task.fixed_files[path]}
    report = _grade_all(LocalSandbox(), [(task, half)])[0]
    assert 0 < report.passed < report.total  # binary reward (the default) pays 0; the fraction would not


def test_control_a_report_carrying_the_expected_values_would_pay(sandbox):
    # The fake-report forgeries do reach the runner's channel: given the expected values (which the
    # sandbox never holds) the same trick would pay. So the defence is that those values are absent.
    task = _tasks(FAST_TASKS[:1])[0]
    values = "[" + ", ".join(repr(c.expected) for c in task.hidden) + "]"
    code = (
        _FAKE_REPORT
        + f"\nVALUES = {values}\nreport = _find('report')\n"
        + "report.write(''.join(f'{i}\\tok\\t{v!r}\\n' for i, v in enumerate(VALUES)))\nreport.flush()\n_os._exit(0)\n"
    )
    report = _grade_all(sandbox, [(task, _init(task, code))])[0]
    assert report.passed == report.total > 0


@pytest.mark.slow
def test_a_submission_that_hangs_still_ends_the_episode_with_nothing():
    # Grading's own limit stays under the per-turn tool time, so `submit` is never cut off mid-grade.
    env = envs.make("repo-fix-v0")
    env.reset(seed=0)
    task = env.unwrapped.task
    hang = SLOW_FORGERIES["alarm ignored, spin at import"](task)[f"{task.package}/__init__.py"]
    edit = {"name": "edit", "arguments": json.dumps({"path": f"{task.package}/__init__.py", "new": hang})}
    env.step({"role": "assistant", "content": "", "tool_calls": [{"function": edit}]})
    submit = {"name": "submit", "arguments": "{}"}
    _, reward, terminated, _, info = env.step(
        {"role": "assistant", "content": "", "tool_calls": [{"function": submit}]}
    )
    assert terminated and reward == 0.0 and info["success"] is False
    env.close()
