"""code-sandbox-v0's grader against an adversarial policy: every forgery scores 0 on every problem.

Each forgery is a submission a policy could write to collect reward without solving the problem. They
run against the real grader in the real sandbox. `{entry}` is the problem's function name (forgeries
that need a function to exist define one).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

import envs
from envs.code.cases import FunctionCase, same_value
from envs.code.grader import grade, read_function_results
from envs.code.problems import bundled_problems, problem_from_dict

PROBLEMS_FILE = Path(envs.__file__).parent / "code" / "data" / "problems.jsonl"

FORGERIES: dict[str, str] = {
    # The forgery that scored 1.0 on all 65 problems against the in-interpreter harness.
    "patch-harness-globals": """
import __main__, builtins
if getattr(__main__, '_program', False): print(__main__._t['output'], end='')
else: builtins.exec = lambda *a, **k: None
""",
    "patch-runner-functions": """
import __main__, sys
for m in list(sys.modules.values()):
    for name in ('_run', '_norm', 'check_plain', 'timed', 'same_value', 'main'):
        try: setattr(m, name, lambda *a, **k: 'forged')
        except Exception: pass
def {entry}(*a, **k): return 'forged'
""",
    "always-equal-object": """
class A:
    __eq__ = lambda s, o: True
    __ne__ = lambda s, o: False
    __hash__ = lambda s: 0
def {entry}(*a, **k): return A()
""",
    "always-equal-str-subclass": """
class S(str):
    __eq__ = lambda s, o: True
def {entry}(*a, **k): return S('x')
""",
    "always-equal-int-subclass": """
class I(int):
    __eq__ = lambda s, o: True
    def __repr__(s): return 'True'
def {entry}(*a, **k): return I(0)
""",
    "repr-is-code": """
class R:
    def __repr__(s): return "__import__('os').system('true')"
def {entry}(*a, **k): return R()
""",
    "sys-exit-0-at-import": "import sys\nsys.exit(0)\n",
    "os-exit-0-at-import": "import os\nos._exit(0)\n",
    "sys-exit-0-in-call": "import sys\ndef {entry}(*a, **k): sys.exit(0)\n",
    "os-exit-0-in-call": "import os\ndef {entry}(*a, **k): os._exit(0)\n",
    "atexit-fake-report": """
import atexit, os
def fake():
    for fd in range(1, 20):
        try: os.write(fd, b''.join(b'%d\\tok\\tTrue\\n' % i for i in range(64)))
        except OSError: pass
atexit.register(fake)
def {entry}(*a, **k): raise SystemExit(0)
""",
    "replace-sys-stdout": """
import sys, io
class W(io.StringIO):
    def write(self, s): return sys.__stdout__.write('0\\tok\\tTrue\\n')
sys.stdout = W()
def {entry}(*a, **k): print('anything'); return 'forged'
""",
    "keyboard-interrupt": "def {entry}(*a, **k): raise KeyboardInterrupt\n",
    "generator-exit": "def {entry}(*a, **k): raise GeneratorExit\n",
    "custom-base-exception": """
class Pass(BaseException): pass
def {entry}(*a, **k): raise Pass('ok')
""",
    "raise-at-import": "raise SystemExit(0)\n",
    "monkeypatch-builtins": """
import builtins
builtins.AssertionError = type('AssertionError', (Exception,), {{}})
builtins.isinstance = lambda *a: True
builtins.type = lambda *a: object
builtins.repr = lambda o: 'True'
builtins.__dict__['len'] = lambda o: 0
def {entry}(*a, **k): return 'forged'
""",
    "frame-introspection": """
import sys
def {entry}(*a, **k):
    f = sys._getframe(1)
    while f is not None:
        for key in list(f.f_locals):
            if key in ('expected', 'output', 'want', '_t', 'config'):
                v = f.f_locals[key]
                if isinstance(v, dict) and ('expected' in v or 'output' in v):
                    return v.get('expected', v.get('output'))
        f = f.f_back
    return 'forged'
""",
    "gc-introspection": """
import gc
def {entry}(*a, **k):
    for o in gc.get_objects():
        if isinstance(o, dict) and ('expected' in o or 'output' in o):
            return o.get('expected', o.get('output'))
    return 'forged'
""",
    "print-fake-report": """
import os, sys
lines = ''.join('%d\\tok\\t%s\\n' % (i, v) for i in range(64) for v in ('True', 'False', '0', '[]', "''"))
print(lines); sys.stdout.flush()
for fd in range(0, 64):
    try: os.write(fd, lines.encode())
    except OSError: pass
print('@@turngym-report-00@@' + '[null, null, null, null, null, null, null, null, null]')
def {entry}(*a, **k): return 'forged'
""",
    "write-every-guess-per-index": """
import os
def {entry}(*a, **k):
    for fd in range(3, 64):
        try: os.write(fd, b''.join(b'%d\\tok\\t%d\\n' % (i, v) for i in range(64) for v in range(3)))
        except OSError: pass
    return 0
""",
    "disable-alarm-and-spin": """
import signal
signal.signal(signal.SIGALRM, signal.SIG_IGN)
def {entry}(*a, **k):
    while True: pass
""",
    "read-hidden-tests-from-disk": """
import json, os
PATHS = [{path!r}]
for root in ('/', '/work', '/root', '/home', '/tmp', '/usr/lib/python3/dist-packages'):
    for dirpath, dirs, files in os.walk(root):
        if 'problems.jsonl' in files: PATHS.append(os.path.join(dirpath, 'problems.jsonl'))
        if dirpath.count('/') > 6: dirs[:] = []
def {entry}(*a, **k):
    for p in PATHS:
        try:
            for line in open(p):
                row = json.loads(line)
                for t in row['tests']:
                    if isinstance(t, dict): continue
                    if repr(a)[1:-1].rstrip(',') in t: return eval(t.rsplit('==', 1)[1])
        except Exception: pass
    return 'forged'
""",
    "echo-stdin": "import sys\nprint(sys.stdin.read())\ndef {entry}(*a, **k): return 'forged'\n",
    "kill-parent": "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\ndef {entry}(*a, **k): return 'forged'\n",
    "patch-ast-literal-eval": """
import sys, ast
ast.literal_eval = lambda s: (lambda: True)
def {entry}(*a, **k): return lambda: True
""",
}

# Forgeries aimed at stdin/stdout problems (the submission is the program).
PROGRAM_FORGERIES: dict[str, str] = {
    "print-nothing-exit-0": "import os\nos._exit(0)\n",
    "echo-input": "import sys\nsys.stdout.write(sys.stdin.read())\n",
    "print-many-candidates": "for i in range(1000): print(i)\n",
    "atexit-print": "import atexit\natexit.register(lambda: print('1'))\n",
}


def _forgery(template: str, entry: str | None) -> str:
    return template.format(entry=entry or "solve", path=str(PROBLEMS_FILE))


@pytest.fixture(scope="module")
def sandbox():
    from tools.sandbox import LocalSandbox

    return LocalSandbox(timeout_s=10)


def _grade_all(sandbox, submissions: list[tuple[object, str]], per_test_s: float = 1.0):
    async def run_all():
        gate = asyncio.Semaphore(4)

        async def one(problem, code):
            async with gate:
                return await grade(sandbox, problem, code, per_test_s=per_test_s)

        return await asyncio.gather(*(one(p, c) for p, c in submissions))

    return asyncio.run(run_all())


# Forgeries that cost a whole-run timeout each; the full-set test runs them on the sample only.
SLOW_FORGERIES = ("disable-alarm-and-spin",)


def _battery(sandbox, problems, skip: tuple[str, ...] = ()) -> dict[str, list[str]]:
    """Forgeries that earned anything: any passed test on a function problem (nothing there can be
    right without computing it), full marks on a program problem (where printing nothing is the
    right output for some inputs, so single passes prove nothing)."""
    jobs, names = [], []
    for p in problems:
        for name, template in {**FORGERIES, **PROGRAM_FORGERIES}.items():
            if name not in skip:
                jobs.append((p, _forgery(template, p.entry_point)))
                names.append(f"{name} on {p.id}")
    reports = _grade_all(sandbox, jobs)
    return {
        n: r.outcomes
        for n, (p, _), r in zip(names, jobs, reports, strict=True)
        if r.fraction == 1.0 or (r.passed and not p.is_program)
    }


# Answers that ignore the input. Under the fraction reward they collected up to 0.78 (valid-ipv4, `False`);
# the default binary reward pays them nothing, because no problem's tests all expect one answer.
TRIVIAL_ANSWERS = ("None", "True", "False", "0", "1", "-1", "''", "[]", "{}", "a[0] if a else None")


def _trivial(problem, answer: str) -> str:
    if problem.is_program:
        return f"a = [input()]\nprint({answer})\n"
    return f"def {problem.entry_point}(*a, **k):\n    return {answer}\n"


def _trivial_rewards(sandbox, problems) -> dict[str, float]:
    jobs = [(p, _trivial(p, answer)) for p in problems for answer in TRIVIAL_ANSWERS]
    reports = _grade_all(sandbox, jobs)
    return {
        f"{p.id}: {code!r}": r.fraction for (p, code), r in zip(jobs, reports, strict=True) if r.fraction == 1
    }


SAMPLE = ("sum-of-evens", "is-palindrome", "word-break", "sum-and-max", "unique-permutations")


def test_no_forgery_passes_a_single_test_on_sample_problems(sandbox):
    problems = [p for p in bundled_problems() if p.id in SAMPLE]
    assert len(problems) == len(SAMPLE)
    assert _battery(sandbox, problems) == {}


@pytest.mark.slow
def test_no_forgery_passes_a_single_test_on_any_bundled_problem(sandbox):
    assert _battery(sandbox, bundled_problems(), skip=SLOW_FORGERIES) == {}


def test_trivial_answers_earn_nothing_on_sample_problems(sandbox):
    assert _trivial_rewards(sandbox, [p for p in bundled_problems() if p.id in SAMPLE]) == {}


@pytest.mark.slow
def test_trivial_answers_earn_nothing_on_any_bundled_problem(sandbox):
    assert _trivial_rewards(sandbox, bundled_problems()) == {}


def test_references_still_pass_under_the_strict_grader(sandbox):
    problems = [p for p in bundled_problems() if p.id in SAMPLE]
    reports = _grade_all(sandbox, [(p, p.reference) for p in problems], per_test_s=4.0)
    assert [r.fraction for r in reports] == [1.0] * len(problems)


def test_forgery_through_the_env_pays_nothing():
    env = envs.make("code-sandbox-v0")
    for template in (FORGERIES["patch-harness-globals"], FORGERIES["always-equal-object"]):
        env.reset(seed=0, options={"problem_id": "fizzbuzz"})
        code = _forgery(template, "fizzbuzz")
        _, reward, terminated, _, info = env.step(f"```python\n{code}\n```")
        assert terminated and reward == 0.0 and info["tests_passed"] == 0


def test_hidden_expected_values_never_enter_the_sandbox(sandbox):
    """What the sandbox receives (code, stdin, files) holds the inputs only, for both kinds of test."""
    seen: list[dict] = []

    class Recording:
        async def arun(self, code, language="python", **kw):
            seen.append({"code": code, **kw})
            return await sandbox.arun(code, language, **kw)

    function = problem_from_dict(
        {
            "prompt": "p",
            "entry_point": "tag",
            "tests": [f"assert tag({i}) == 'SECRET-EXPECTED-{i}'" for i in range(3)],
            "reference": "def tag(i):\n    return 'SECRET-' + f'EXPECTED-{i}'\n",
        },
        "mine",
    )
    program = problem_from_dict(
        {"prompt": "p", "tests": [{"input": f"{i}\n", "output": f"SECRET-OUTPUT-{i}"} for i in range(3)]},
        "mine",
    )
    reports = [
        asyncio.run(grade(Recording(), function, function.reference)),
        asyncio.run(grade(Recording(), program, "print('SECRET-' + 'OUTPUT-' + input())")),
    ]
    assert [r.fraction for r in reports] == [1.0, 1.0]
    sent = json.dumps(seen, default=str)
    assert len(seen) == 4 and "SECRET-EXPECTED" not in sent and "SECRET-OUTPUT" not in sent


def test_runner_lines_are_decoded_as_data_in_the_grader():
    cases = [FunctionCase("f", (1,), {}, 2), FunctionCase("f", (2,), {}, [1, (2, 3)])]
    assert read_function_results("0\tok\t2\n1\tok\t[1, (2, 3)]\n", cases) == [None, None]
    assert read_function_results("0\tok\t2.0\n1\tok\t[1, [2, 3]]\n", cases) == ["WrongAnswer"] * 2
    assert read_function_results("0\tok\t2\n0\tok\t3\n", cases) == ["NoResult", "NoResult"]
    assert read_function_results("0\tok\t__import__('os')\n1\terr\tEvil<script>\n", cases) == [
        "NotPlainData",
        "Exception",
    ]
    deep = "[" * 100_000 + "]" * 100_000
    assert read_function_results(f"0\tok\t{deep}\n", cases)[0] == "NotPlainData"


def test_same_value_is_exact_about_types():
    assert same_value([1, (2, "a")], [1, (2, "a")])
    assert not same_value(True, 1) and not same_value(1, 1.0) and not same_value([1], (1,))
    assert not same_value({1: "a"}, {True: "a"}) and not same_value({1}, {True})
    assert same_value({"a": [1, {2}]}, {"a": [1, {2}]})
    assert same_value(float("nan"), float("nan")) and not same_value(0.1 + 0.2, 0.3)
