"""Moved modules (issue 35): every old path still imports the moved module itself, with one warning."""

import importlib
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_layers import FILE_SHIMS, moved_paths  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
ALIASED = sorted((old, new) for old, new in moved_paths().items() if old not in FILE_SHIMS)


def test_the_tables_hold_the_moves_of_issue_35():
    aliased = dict(ALIASED)
    for old, new in [
        ("tools.registration", "turngym.common.registration"),
        ("tools.calls", "turngym.chat.calls"),
        ("tools.serving", "turngym.serving"),
        ("interactions.engine", "turngym.chat.engine"),
        ("rollout.hf_engine", "turngym.engines.hf_engine"),
        ("rollout.chat_format", "turngym.chat.format"),
        ("envs.messages", "turngym.chat.message"),
        ("envs.remote.server", "envs.server.app"),
        ("envs.text_env", "envs.core.text_env"),
        ("envs.registration", "envs.registry.registration"),
    ]:
        assert aliased[old] == new


@pytest.mark.parametrize(("old", "new"), ALIASED)
def test_an_old_path_is_the_moved_module_and_warns_once(old: str, new: str):
    # A fresh interpreter: in this one the old path may have been imported (and warned) already.
    code = (
        "import importlib, warnings\n"
        "warnings.simplefilter('always')\n"
        f"with warnings.catch_warnings(record=True) as caught:\n"
        f"    old = importlib.import_module({old!r}); again = importlib.import_module({old!r})\n"
        f"assert old is again is importlib.import_module({new!r})\n"
        "print(sum(issubclass(w.category, DeprecationWarning) for w in caught), caught[0].message)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    count, message = done.stdout.strip().split(" ", 1)
    assert count == "1" and message == f"{old} moved to {new}; import it from there"


@pytest.mark.parametrize(("old", "new"), sorted(FILE_SHIMS.items()))
def test_an_old_path_kept_as_a_file_gives_the_same_objects(old: str, new: str):
    sys.modules.pop(old, None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        shim = importlib.import_module(old)
    assert any(issubclass(w.category, DeprecationWarning) and new in str(w.message) for w in caught)
    moved = importlib.import_module(new)
    assert shim.__all__
    for name in shim.__all__:
        assert getattr(shim, name) is getattr(moved, name), name


def test_the_names_tools_exported_still_resolve_without_a_warning():
    import tools
    import turngym.chat.calls
    import turngym.common.registration

    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        assert tools.Registry is turngym.common.registration.Registry
        assert tools.load_entry_point is turngym.common.registration.load_entry_point
        assert tools.parse_tool_calls is turngym.chat.calls.parse_tool_calls


def test_the_serve_options_moved_with_the_server():
    import envs.remote
    import envs.server

    with pytest.warns(DeprecationWarning, match="envs.server.add_serve_arguments"):
        assert envs.remote.add_serve_arguments is envs.server.add_serve_arguments
