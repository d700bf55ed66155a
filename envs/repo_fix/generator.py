"""Generates one repo-fix episode: a small package with visible tests, injected bugs and hidden test cases.

Everything is drawn from the episode's numpy Generator, so a seed fixes the repository. Expected values
come from the correct templates loaded in this process; each injected bug is checked to fail at least
one visible test (so the agent can see it) and at least two hidden cases of its own function (so the
unfixed repo never scores).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from envs.code.cases import same_value
from envs.repo_fix.catalogue import BUGS, MODULES, Bug, call_in_process, closure, dependents, template_source
from envs.repo_fix.trusted_loader import load_modules

PACKAGES = ("shop", "ledger", "toolkit", "acme", "orchard", "harbor", "atlas", "quill")

#: difficulty -> bugs, whether a buggy function keeps its own visible test, extra unrelated modules,
#: hidden cases per function
DIFFICULTIES: dict[str, dict[str, Any]] = {
    "easy": {"bugs": 1, "direct": True, "extra_modules": 0, "hidden_per_function": 4},
    "medium": {"bugs": 1, "direct": False, "extra_modules": 1, "hidden_per_function": 4},
    "hard": {"bugs": 2, "direct": False, "extra_modules": 2, "hidden_per_function": 5},
}

RUN_TESTS = '''"""Runs every test_* function in tests/test_*.py and reports each one: python3 run_tests.py"""

import importlib
import pathlib
import sys
import traceback

root = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(root))
passed = failed = 0
for path in sorted((root / "tests").glob("test_*.py")):
    try:
        module = importlib.import_module(f"tests.{path.stem}")
    except Exception:
        failed += 1
        print(f"ERROR tests/{path.name} (import failed)")
        traceback.print_exc(file=sys.stdout)
        continue
    for name, test in sorted(vars(module).items()):
        if not (name.startswith("test_") and callable(test)):
            continue
        try:
            test()
        except Exception:
            failed += 1
            print(f"FAIL tests/{path.name}::{name}")
            traceback.print_exc(file=sys.stdout)
        else:
            passed += 1
            print(f"PASS tests/{path.name}::{name}")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
'''


@dataclass(frozen=True)
class HiddenCase:
    """`package.module.function(*args)` must return `expected` (type included); graded outside the sandbox."""

    module: str
    function: str
    args: tuple
    expected: Any


@dataclass
class RepoTask:
    """One generated episode."""

    package: str
    difficulty: str
    files: dict[str, str]  # the repository the agent starts from (bugs in)
    fixed_files: dict[str, str]  # the same repository with every bug undone
    bugs: list[Bug]
    hidden: list[HiddenCase]
    #: visible test id ("tests/test_cart.py::test_checkout") -> the bugs that make it fail
    catches: dict[str, list[Bug]] = field(default_factory=dict)

    def module_path(self, module: str) -> str:
        """Where `module` lives in the repository."""
        return f"{self.package}/{module}.py"


def _pick(rng: np.random.Generator, seq: list | tuple) -> Any:
    return seq[int(rng.integers(len(seq)))]


def _sources(modules: list[str], bugs: list[Bug]) -> tuple[tuple[str, str], ...]:
    out = []
    for name in modules:
        text = template_source(name)
        for bug in bugs:
            if bug.module == name:
                text = text.replace(bug.old, bug.new, 1)
        out.append((name, text))
    return tuple(out)


def _differs(ref: dict, broken: dict, module: str, function: str, args: tuple) -> bool:
    ok_ref, want = call_in_process(ref, module, function, args)
    ok_bad, got = call_in_process(broken, module, function, args)
    return ok_ref != ok_bad or not same_value(got, want)


def _draw(rng: np.random.Generator, ref: dict, module: str, function: str) -> tuple:
    """Inputs on which the correct function returns (the generators rarely make it raise)."""
    inputs = MODULES[module][1][function]
    for _ in range(50):
        args = inputs(rng)
        if call_in_process(ref, module, function, args)[0]:
            return args
    raise RuntimeError(f"the input generator of {module}.{function} keeps making it raise")


def _choose_modules(rng: np.random.Generator, bugs: list[Bug], direct: bool, extra: int) -> list[str] | None:
    wanted = {b.module for b in bugs}
    for bug in bugs:
        if not direct:
            above = dependents(bug.module)
            if above:
                wanted.add(_pick(rng, above))
    others = [m for m in MODULES if m not in closure(wanted)]
    for _ in range(extra):
        if others:
            wanted.add(others.pop(int(rng.integers(len(others)))))
    return closure(wanted)


def _attempt(rng: np.random.Generator, difficulty: str) -> RepoTask | None:
    params = DIFFICULTIES[difficulty]
    package = _pick(rng, PACKAGES)
    bugs: list[Bug] = []
    while len(bugs) < params["bugs"]:
        bug = _pick(rng, BUGS)
        if all(b.module != bug.module for b in bugs):
            bugs.append(bug)
    modules = _choose_modules(rng, bugs, params["direct"], params["extra_modules"])
    if modules is None:
        return None
    ref = load_modules(_sources(modules, []))
    broken_each = [load_modules(_sources(modules, [b])) for b in bugs]
    hidden_functions = set() if params["direct"] else {(b.module, b.function) for b in bugs}

    # Visible cases: three per shown function; each bug must make at least one of them fail.
    visible: dict[tuple[str, str], list[tuple]] = {}
    for module in modules:
        for function in MODULES[module][1]:
            if (module, function) not in hidden_functions:
                visible[(module, function)] = [_draw(rng, ref, module, function) for _ in range(3)]
    for bug, broken in zip(bugs, broken_each, strict=True):
        caught = any(_differs(ref, broken, m, f, a) for (m, f), cases in visible.items() for a in cases)
        candidates = [key for key in visible if bug.module in closure([key[0]])]
        for _ in range(60):
            if caught or not candidates:
                break
            module, function = _pick(rng, candidates)
            args = _draw(rng, ref, module, function)
            if _differs(ref, broken, module, function, args):
                visible[(module, function)][0] = args
                caught = True
        if not caught:
            return None
    visible_args = {(m, f, repr(a)) for (m, f), cases in visible.items() for a in cases}

    # Hidden cases: fresh inputs for every function; each bug fails at least two of its own function's.
    hidden: list[HiddenCase] = []
    seen: set[tuple[str, str, str]] = set()

    def add(module: str, function: str, args: tuple) -> bool:
        key = (module, function, repr(args))
        ok, want = call_in_process(ref, module, function, args)
        if key in seen or key in visible_args or not ok:
            return False
        seen.add(key)
        hidden.append(HiddenCase(module, function, args, want))
        return True

    for bug, broken in zip(bugs, broken_each, strict=True):
        found = 0
        inputs = MODULES[bug.module][1][bug.function]
        for _ in range(200):
            args = inputs(rng)
            if _differs(ref, broken, bug.module, bug.function, args) and add(bug.module, bug.function, args):
                found += 1
                if found == 2:
                    break
        if found < 2:
            return None
    for module in modules:
        for function, inputs in MODULES[module][1].items():
            for _ in range(params["hidden_per_function"] * 3):
                if (
                    sum(c.module == module and c.function == function for c in hidden)
                    >= params["hidden_per_function"]
                ):
                    break
                add(module, function, inputs(rng))
    hidden.sort(key=lambda c: (modules.index(c.module), c.function))

    fixed_files = _repository(package, modules, [], visible, ref)
    files = _repository(package, modules, bugs, visible, ref)
    task = RepoTask(package, difficulty, files, fixed_files, bugs, hidden)
    all_broken = load_modules(_sources(modules, bugs))
    for (module, function), cases in visible.items():
        test_id = f"tests/test_{module}.py::test_{function}"
        for bug, broken in zip(bugs, broken_each, strict=True):
            if any(_differs(ref, broken, module, function, a) for a in cases):
                task.catches.setdefault(test_id, []).append(bug)
    if not any(_differs(ref, all_broken, c.module, c.function, c.args) for c in hidden):
        return None
    return task


def _repository(
    package: str,
    modules: list[str],
    bugs: list[Bug],
    visible: dict[tuple[str, str], list[tuple]],
    ref: dict,
) -> dict[str, str]:
    files = {
        "README.md": (
            f"# {package}\n\nA small Python package. Run the tests with `python3 run_tests.py` "
            "(plain Python, no pytest needed).\n"
        ),
        "run_tests.py": RUN_TESTS,
        f"{package}/__init__.py": f'"""The {package} package: {", ".join(modules)}."""\n',
    }
    for name, text in _sources(modules, bugs):
        files[f"{package}/{name}.py"] = text
    for module in modules:
        tests = [(f, cases) for (m, f), cases in visible.items() if m == module]
        if not tests:
            continue
        lines = [
            f'"""Tests of {package}.{module}; run every test with `python3 run_tests.py`."""',
            "",
            f"from {package} import {module}",
            "",
            "",
            "def check(got, want):",
            '    assert got == want, f"expected {want!r}, got {got!r}"',
        ]
        for function, cases in tests:
            lines += ["", "", f"def test_{function}():"]
            for args in cases:
                _, want = call_in_process(ref, module, function, args)
                call = ", ".join(repr(a) for a in args)
                lines.append(f"    check({module}.{function}({call}), {want!r})")
        files[f"tests/test_{module}.py"] = "\n".join(lines) + "\n"
    return files


def generate(rng: np.random.Generator, difficulty: str) -> RepoTask:
    """A repository for one episode at `difficulty` (easy, medium or hard), drawn from `rng`."""
    if difficulty not in DIFFICULTIES:
        raise ValueError(f"difficulty must be one of {sorted(DIFFICULTIES)}, got {difficulty!r}")
    for _ in range(200):
        task = _attempt(rng, difficulty)
        if task is not None:
            return task
    raise RuntimeError(f"could not generate a {difficulty} repository")  # not seen: each try rarely fails
