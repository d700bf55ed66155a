"""A user's own `common.py` (or `chat.py`, `serving.py`, `engines.py`) in the working folder shadows none of ours.

Python puts the working folder first on `sys.path` (`python -c`, `python -m`), so a top-level package
with a generic name would be answered by the user's file of that name. turngym's shared layer lives
under `turngym` (issue 44); these commands run in a folder holding such files, each of which leaves a
marker when imported, and must neither import them nor fail.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
USER_FILES = ("common", "chat", "serving", "engines")


@pytest.fixture
def user_folder(tmp_path: Path) -> Path:
    for name in USER_FILES:
        # Imported, the file leaves `<name>.py.imported` beside itself.
        (tmp_path / f"{name}.py").write_text("open(__file__ + '.imported', 'w').close()\n")
    return tmp_path


@pytest.mark.parametrize(
    "argv",
    [
        ["-c", "import envs, tools, interactions, trainer, rollout.eval"],
        ["-m", "rollout.eval", "--help"],
    ],
    ids=["import", "rollout.eval --help"],
)
def test_a_users_common_py_is_not_imported(user_folder: Path, argv: list[str]):
    # This checkout first on the path, as an install would put it (but behind the working folder).
    python_path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    done = subprocess.run(
        [sys.executable, *argv],
        cwd=user_folder,
        env={**os.environ, "PYTHONPATH": python_path},
        capture_output=True,
        text=True,
        timeout=300,
    )
    imported = sorted(path.name for path in user_folder.glob("*.imported"))
    assert not imported, f"the user's files were imported in place of turngym's: {imported}\n{done.stderr}"
    assert done.returncode == 0, done.stderr
