"""A non-editable install of this checkout: its wheel in a fresh venv under a directory the sandbox mounts.

Used by the hidden-data tests and `bench/hidden_data.py` to look at turngym the way a user installs it
(`pip install turngym` into a system or container Python), not as the editable checkout tests run from.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _source_copy(dest: Path) -> None:
    # Build from a copy so the build leaves no build/ or egg-info behind in the checkout.
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for raw in filter(None, listed):
        rel = raw.decode()
        src = REPO / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)


def _build_env() -> dict[str, str]:
    # A PYTHONPATH naming the checkout (trainer.run exports one) makes pip see the checkout's egg-info as
    # turngym already installed, and the wheel then goes in without its data files.
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("PIP_")}


@contextlib.contextmanager
def installed_wheel(parent: str = "/usr/local") -> Iterator[Path]:
    """Yield the root of a venv under `parent` holding this checkout installed from its wheel (no deps).

    Its interpreter imports turngym from that install; run it with `deps_env()` so the dependencies come
    from the interpreter running this (their site dir is added, not the checkout). Removed on exit.
    """
    work = Path(tempfile.mkdtemp(prefix="turngym-wheel-"))
    venv = Path(tempfile.mkdtemp(prefix="turngym-installed-", dir=parent))
    venv.chmod(0o755)  # as `pip install` leaves a system dir: readable by every uid (mkdtemp makes it 0700)
    try:
        src = work / "src"
        _source_copy(src)
        pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
        subprocess.run(
            [*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(work), str(src)],
            check=True,
            capture_output=True,
            env=_build_env(),
        )
        (wheel,) = work.glob("turngym-*.whl")
        subprocess.run(
            [sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, env=_build_env()
        )
        subprocess.run(
            [
                *pip,
                "--python",
                str(venv / "bin" / "python"),
                "install",
                "--no-deps",
                "--no-index",
                str(wheel),
            ],
            check=True,
            capture_output=True,
            env=_build_env(),
        )
        yield venv
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(venv, ignore_errors=True)


def deps_env(venv: Path) -> dict[str, str]:
    """Environment for the installed venv's Python: turngym's dependencies from this interpreter's site dir
    (PYTHONPATH entries hold no .pth files, so an editable checkout there stays out of reach)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = sysconfig.get_paths()["purelib"]
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env
