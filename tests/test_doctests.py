"""The docstring examples run, and the public API documents its arguments, return value and an example.

One test case per module of the packages whose source holds `>>> `: its examples run with the
standard library's doctest (ELLIPSIS and NORMALIZE_WHITESPACE on) in an empty working directory and
an empty temp directory, which must both stay empty. An example that needs an optional extra that is
not installed (an import of it) skips its module with a reason naming the extra. Examples must be
fast: they may not start Ray (a model load or a training run is shown with `# doctest: +SKIP`).

Run as a script to print the examples each module holds and the total:
`.venv/bin/python tests/test_doctests.py`.
"""

from __future__ import annotations

import ast
import doctest
import importlib
import importlib.util
import inspect
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("turngym", "envs", "tools", "interactions", "rollout", "trainer")
OPTIONS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
# Libraries an example may import that only an extra installs (pyproject.toml's optional-dependencies).
EXTRAS = {
    "torch": "train",
    "transformers": "train",
    "verl": "train",
    "omegaconf": "train",
    "hydra": "train",
    "pandas": "train",
    "pyarrow": "train",
    "textarena": "textarena",
    "fastapi": "sandbox",
    "uvicorn": "sandbox",
    "starlette": "sandbox",
    "websockets": "openenv",
    "gguf": "real",
}
# Programs (not Python packages) a module's examples run; CI has them, a laptop may not.
PROGRAMS = {"tools.sandbox.local": ("bwrap",)}
# What an example must never start (it would make the doctests slow and leave processes behind).
FORBIDDEN = ("ray",)
# What may stay in the temp dir: the sandbox's compiled launcher and uid locks, caches that every
# process reuses by design (tools/sandbox/spawn.py, uid_slot.py).
CACHES = ("turngym-sandbox-",)


def doctest_modules() -> dict[str, Path]:
    """{dotted module name: file} for every module of the packages whose source holds `>>> `."""
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if ">>> " not in path.read_text(encoding="utf-8"):
                continue
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _example_imports(tests: list[doctest.DocTest]) -> set[str]:
    """Top-level names of the modules the (not skipped) examples import."""
    names = set()
    for test in tests:
        for example in test.examples:
            if example.options.get(doctest.SKIP):
                continue
            try:
                tree = ast.parse(example.source)
            except SyntaxError:
                continue  # the runner reports it as the example's failure
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    names.update(alias.name.split(".")[0] for alias in node.names)
                elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                    names.add(node.module.split(".")[0])
    return names


def _missing_extra(names: set[str]) -> str | None:
    """A skip reason when one of `names` is not installed, else None."""
    for name in sorted(names):
        if name in PACKAGES or importlib.util.find_spec(name) is not None:
            continue
        extra = EXTRAS.get(name)
        return f"the examples import {name}, which is not installed" + (
            f" (pip install 'turngym[{extra}]')" if extra else ""
        )
    return None


class NeedsExtra(Exception):
    """The module or its examples import a library an extra installs, and it is not installed."""


def load_doctests(name: str) -> list[doctest.DocTest]:
    """The module's doctests; NeedsExtra when it, or an example that runs, needs a missing library."""
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as exc:
        top = (exc.name or "").split(".")[0]
        if top and top not in PACKAGES:
            raise NeedsExtra(_missing_extra({top}) or f"{name} imports {exc.name}") from None
        raise
    # The finder keeps only objects defined in this module (not what it imports from elsewhere).
    tests = [t for t in doctest.DocTestFinder().find(module, name) if t.examples]
    reason = _missing_extra(_example_imports(tests))
    if reason:
        raise NeedsExtra(reason)
    return tests


def count_examples(tests: list[doctest.DocTest]) -> tuple[int, int]:
    """(examples that run, examples marked +SKIP)."""
    skipped = sum(bool(e.options.get(doctest.SKIP)) for t in tests for e in t.examples)
    return sum(len(t.examples) for t in tests) - skipped, skipped


def module_dirs(base: Path, name: str) -> tuple[Path, Path]:
    """(working dir, temp dir) the examples of module `name` run in, under `base`."""
    return base / name / "cwd", base / name / "tmp"


def run_examples(base: Path) -> dict[str, dict]:
    """Run every module's examples in this process, each in its own empty working and temp dirs
    under `base`; what the child process reports to `test_examples_run`, by module."""
    results = {}
    for name in sorted(doctest_modules()):
        work, scratch = module_dirs(base, name)
        for folder in (work, scratch):
            folder.mkdir(parents=True)
            # A sandbox's work dir is made in the temp dir and the sandbox's own uid must reach it.
            folder.chmod(0o711)
        os.chdir(work)
        os.environ["TMPDIR"] = tempfile.tempdir = str(scratch)
        before = {m for m in FORBIDDEN if m in sys.modules}
        try:
            tests = load_doctests(name)
        except NeedsExtra as exc:
            results[name] = {"skip": str(exc)}
            continue
        out = io.StringIO()
        runner = doctest.DocTestRunner(optionflags=OPTIONS)
        for test in tests:
            runner.run(test, out=out.write)
        # LocalSandbox removes a run's work dir on its housekeeping thread after the run returns:
        # wait for it before the parent looks for leftovers.
        deferred = sys.modules.get("tools.sandbox.deferred")
        if deferred is not None:
            deferred.flush(timeout_s=30)
        result = runner.summarize(verbose=False)
        results[name] = {
            "found": len(tests),
            "attempted": result.attempted,
            "failed": result.failed,
            "report": out.getvalue(),
            "started": sorted(m for m in FORBIDDEN if m in sys.modules and m not in before),
        }
    return results


@pytest.fixture(scope="module")
def example_results():
    """Every module's examples, run once in a child process (module by module) for the whole file.

    A child process: what the examples import, start or cache cannot leak into the test session. Its
    dirs sit beside the system temp dir, not under pytest's (private to this user; a sandbox's uid
    could not reach them).
    """
    base = Path(tempfile.mkdtemp(prefix="turngym-doctest-"))
    base.chmod(0o711)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--run", str(base)],
        cwd=base,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    try:
        assert done.returncode == 0, f"running the examples crashed:\n{done.stderr[-3000:]}"
        yield base, json.loads(done.stdout.splitlines()[-1])
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("name", sorted(doctest_modules()))
def test_examples_run(name: str, example_results) -> None:
    for program in PROGRAMS.get(name, ()):
        if shutil.which(program) is None:
            pytest.skip(f"the examples run {program}, which is not on PATH")
    base, results = example_results
    result = results[name]
    if "skip" in result:
        pytest.skip(result["skip"])
    assert result["found"], f"{name} holds '>>> ' but no docstring example was found in it"
    assert result["failed"] == 0, (
        f"{result['failed']} of {result['attempted']} examples in {name} failed:\n{result['report']}"
    )
    assert not result["started"], (
        f"the examples in {name} imported {result['started']}: show such a run with # doctest: +SKIP"
    )
    left = sorted(
        str(path)
        for folder in module_dirs(base, name)
        for path in folder.rglob("*")
        if not path.relative_to(folder).parts[0].startswith(CACHES)
    )
    assert not left, f"the examples in {name} left files behind: {left}"


def test_an_example_needing_a_missing_extra_skips_with_the_pip_line(monkeypatch: pytest.MonkeyPatch):
    parser = doctest.DocTestParser()
    source = """
    >>> import json
    >>> import turngym_absent_lib  # doctest: +SKIP
    >>> from turngym_absent_lib.sub import thing
    """
    test = parser.get_doctest(source, {}, "m", "m.py", 0)
    assert _example_imports([test]) == {"json", "turngym_absent_lib"}
    monkeypatch.setitem(EXTRAS, "turngym_absent_lib", "train")
    reason = _missing_extra(_example_imports([test]))
    assert (
        reason
        == "the examples import turngym_absent_lib, which is not installed (pip install 'turngym[train]')"
    )
    skipped_only = parser.get_doctest(">>> import turngym_absent_lib  # doctest: +SKIP\n", {}, "m", "m.py", 0)
    assert _missing_extra(_example_imports([skipped_only])) is None


# The public API: each object's docstring (a class's together with its __init__'s) has `Args:` naming
# every parameter, `Returns:` when it returns something, and at least one `>>> ` example.
PUBLIC_API = [
    "envs.make",
    "envs.TextEnv",
    *[f"envs.wrappers.{name}" for name in importlib.import_module("envs.wrappers").__all__],
    "tools.Tool",
    "tools.tool",
    "tools.ToolRegistry",
    "tools.sandbox.LocalSandbox",
    "rollout.collect",
    "rollout.acollect",
    "rollout.HFEngine",
    "trainer.run.main",
]


def resolve(dotted: str):
    """The object a dotted name names (`package.module.attr` or `package.attr`)."""
    module_name, _, attr = dotted.rpartition(".")
    return getattr(importlib.import_module(module_name), attr)


def documented_args(doc: str) -> set[str]:
    """The names an `Args:` section lists (`name:` or `name (type):` one indent in from `Args:`)."""
    names: set[str] = set()
    lines = doc.splitlines()
    for i, line in enumerate(lines):
        if line.strip() != "Args:":
            continue
        section = len(line) - len(line.lstrip())
        entry = None  # the indent of the section's entries: that of its first line
        for body in lines[i + 1 :]:
            if not body.strip():
                continue
            indent = len(body) - len(body.lstrip())
            if indent <= section:
                break
            entry = indent if entry is None else entry
            match = re.match(r"\*{0,2}(\w+)\s*(?:\([^)]*\))?:", body.strip())
            if indent == entry and match:
                names.add(match.group(1))
    return names


def _parameters(obj) -> list[str]:
    if inspect.isclass(obj) and obj.__init__ is object.__init__:
        return []  # no constructor arguments
    target = obj.__init__ if inspect.isclass(obj) else obj
    try:
        params = inspect.signature(target).parameters
    except (TypeError, ValueError):
        return []
    return [p for p in params if p not in ("self", "cls")]


def test_public_api_lists_objects_that_exist():
    assert len(PUBLIC_API) >= 10
    for name in PUBLIC_API:
        assert callable(resolve(name)), name


@pytest.mark.parametrize("name", PUBLIC_API)
def test_public_api_docstring(name: str) -> None:
    obj = resolve(name)
    is_class = inspect.isclass(obj)
    doc = inspect.getdoc(obj) or ""
    if is_class and "__init__" in vars(obj):
        doc += "\n\n" + (inspect.getdoc(obj.__init__) or "")
    problems = []
    params = _parameters(obj)
    listed = documented_args(doc)
    if params and not listed:
        problems.append("no Args: section")
    missing = [p for p in params if p not in listed]
    if listed and missing:
        problems.append(f"Args: does not list {missing}")
    if not is_class:
        returns = inspect.signature(obj).return_annotation
        if returns not in (None, "None", inspect.Signature.empty) and not re.search(
            r"^\s*Returns:", doc, re.M
        ):
            problems.append(f"no Returns: section (it returns {returns})")
    if ">>> " not in doc:
        problems.append("no >>> example")
    assert not problems, f"{name}: " + "; ".join(problems)


def design_page_paths(text: str) -> list[str]:
    """The repository paths docs/design.md names in backticks: `a/b.py`, `a/b/`, and a bare `c.py`
    after a path on the same line (the same folder as that path)."""
    found = []
    for line in text.splitlines():
        folder = None
        for token in re.findall(r"`([\w./-]+)`", line):
            if "/" in token and (token.endswith((".py", "/")) or token.startswith(("tests/", "docs/"))):
                found.append(token)
                folder = token if token.endswith("/") else token.rsplit("/", 1)[0] + "/"
            elif token.endswith(".py") and folder is not None:
                found.append(folder + token)
    return found


def test_design_page_names_modules_that_exist():
    text = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    paths = design_page_paths(text)
    assert len(paths) > 50, "docs/design.md's concept table went missing"
    missing = [path for path in paths if not (ROOT / path).exists()]
    assert not missing, f"docs/design.md names paths that do not exist: {missing}"


def main(argv: list[str]) -> int:
    """Print each module's example count (run, +SKIP) and the totals; `--run NAME` runs one module."""
    if argv[:1] == ["--run"]:
        print(json.dumps(run_examples(Path(argv[1]))))
        return 0
    total_run = total_skipped = 0
    for name in sorted(doctest_modules()):
        try:
            ran, skipped = count_examples(load_doctests(name))
        except NeedsExtra as exc:
            print(f"{name:45} skipped: {exc}")
            continue
        total_run, total_skipped = total_run + ran, total_skipped + skipped
        print(f"{name:45} {ran:3} examples, {skipped} marked +SKIP")
    print(f"\n{len(doctest_modules())} modules, {total_run} examples run, {total_skipped} marked +SKIP")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main(sys.argv[1:]))
