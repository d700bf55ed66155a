"""The engines moved out of rollout/ (issue 35); the old paths that are commands still import, warn and run.

`python -m rollout.serve`, `python -m rollout.named_models` and `python -m rollout.embedded_model`
keep working and say where the command went.
"""

import ast
import importlib
import importlib.util
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# The engine paths that are also commands keep a file each; the rest are aliases (tests/test_moved_paths.py).
MOVED = {
    "rollout.named_models": "turngym.engines.named_models",
    "rollout.embedded_model": "turngym.engines.embedded_model",
    "rollout.serve": "turngym.engines.serve",
}


@pytest.mark.parametrize(("old", "new"), sorted(MOVED.items()))
def test_an_old_path_still_works_and_warns(old: str, new: str):
    sys.modules.pop(old, None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        shim = importlib.import_module(old)
    assert any(issubclass(w.category, DeprecationWarning) and new in str(w.message) for w in caught)
    moved = importlib.import_module(new)
    assert shim.__all__
    for name in shim.__all__:
        assert getattr(shim, name) is getattr(moved, name)


def defined_names(module: str) -> set[str]:
    """The public names a module defines at its top level (def, class, assignment), read with `ast`."""
    tree = ast.parse(Path(importlib.util.find_spec(module).origin).read_text(encoding="utf-8"))
    names = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return {name for name in names if not name.startswith("_")}


@pytest.mark.parametrize(("old", "new"), sorted(MOVED.items()))
def test_every_public_name_of_a_moved_module_is_in_its_shim(old: str, new: str):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        shim = importlib.import_module(old)
    moved = importlib.import_module(new)
    public = set(getattr(moved, "__all__", None) or defined_names(new) - {"USAGE"})
    assert public <= set(shim.__all__), sorted(public - set(shim.__all__))


def test_rollout_still_exports_the_engines():
    import rollout
    from turngym import engines

    for name in ("Engine", "EngineError", "Generation", "SamplingParams", "HFEngine", "SGLangEngine"):
        assert getattr(rollout, name) is getattr(engines, name)


@pytest.mark.parametrize("old", ["rollout.serve", "rollout.named_models"])
def test_an_old_command_still_runs_and_names_the_new_one(old: str):
    done = subprocess.run(
        [sys.executable, "-m", old, "--help"], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "usage" in done.stdout.lower()
    assert f"{old} moved to {MOVED[old]}" in done.stderr
