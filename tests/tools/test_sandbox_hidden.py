"""Hidden data stays hidden from sandboxed code however turngym is installed (here: a wheel in a venv
under /usr/local, which the sandbox mounts read-only with /usr)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from installed_wheel import REPO, deps_env, installed_wheel

from tools.sandbox import hidden
from tools.sandbox.bwrap import bwrap_path
from tools.sandbox.hidden import hidden_paths

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or bwrap_path() is None, reason="needs root (to write /usr/local) and bubblewrap"
)

PLANTED = "turngym-visible-control-5f1c9a"

# Inside the sandbox: read every regular file under / up to 1 MB (skipping /proc and /sys, whose files
# are the sandbox's own processes and kernel tunables; the secrets are small text files, the files
# skipped are shared libraries and data blobs) and report which needles appear, and where.
SEARCH = r"""
import json, os, sys
needles = json.loads(sys.stdin.read())
hits, read = {}, 0
for top in sorted(os.listdir('/')):
    if top in ('proc', 'sys'):
        continue
    for dirpath, dirs, files in os.walk('/' + top):
        for name in files:
            path = os.path.join(dirpath, name)
            try:
                if os.path.islink(path) or not os.path.isfile(path) or os.path.getsize(path) > 1 << 20:
                    continue
                with open(path, 'rb') as fh:
                    data = fh.read()
            except OSError:
                continue
            read += 1
            for n in needles:
                if n.encode() in data:
                    hits.setdefault(n, []).append(path)
print(json.dumps({'hits': hits, 'read': read}))
"""

DRIVER = r"""
import json, sys
import envs
from tools.sandbox import LocalSandbox
assert envs.__file__.startswith(sys.argv[1]), envs.__file__
result = LocalSandbox(timeout_s=240).run(sys.argv[2], stdin=sys.argv[3], timeout_s=240)
print(json.dumps({'status': result.status, 'message': result.message, 'stdout': result.stdout}))
"""


def _stdlib_dir() -> str:
    """The sandbox Python's standard library directory (bound into every sandbox)."""
    from tools.sandbox.local import default_python

    ask = "import os; print(os.path.dirname(os.__file__))"
    done = subprocess.run(
        [default_python(), "-I", "-S", "-c", ask], capture_output=True, text=True, check=True
    )
    return os.path.realpath(done.stdout.strip())


def _secrets() -> list[str]:
    """A hidden test's expected value from problems.jsonl and a hidden repo-fix line (its catalogue)."""
    rows = [json.loads(line) for line in (REPO / "envs/code/data/problems.jsonl").read_text().splitlines()]
    program = next(t["output"] for r in rows for t in r["tests"] if isinstance(t, dict) and "output" in t)
    longest_test = max((t for r in rows for t in r["tests"] if isinstance(t, str)), key=len)
    catalogue = (REPO / "envs/repo_fix/catalogue.py").read_text()
    bug_line = next(line.strip() for line in catalogue.splitlines() if line.strip().startswith('Bug("dates"'))
    template = (REPO / "envs/repo_fix/templates/dates.py").read_text()
    body = max(template.split("\n\n"), key=len).strip().splitlines()[1].strip()
    return [s for s in (longest_test, bug_line, body, program.strip()) if len(s) >= 12]


@pytest.mark.slow
def test_no_secret_of_an_installed_wheel_is_readable_in_the_sandbox():
    needles = [*_secrets(), PLANTED]
    assert len(needles) >= 4
    with installed_wheel() as venv:
        site = next(venv.glob("lib/python3*/site-packages"))
        # The control: the search finds a string planted in a visible place (a code dir the sandbox
        # binds; the venv itself is out of its view).
        control = Path(_stdlib_dir()) / f"turngym-planted-{os.getpid()}.txt"
        control.write_text(PLANTED)
        control.chmod(0o644)
        assert (site / "envs/code/data/problems.jsonl").is_file()
        try:
            done = subprocess.run(
                [str(venv / "bin/python"), "-c", DRIVER, str(site), SEARCH, json.dumps(needles)],
                env=deps_env(venv),
                cwd="/",
                capture_output=True,
                text=True,
                timeout=300,
            )
        finally:
            control.unlink()
        assert done.returncode == 0, done.stderr[-2000:]
        result = json.loads(done.stdout.strip().splitlines()[-1])
        assert result["status"] == "ok", result
        report = json.loads(result["stdout"])
    assert report["read"] > 1000  # the walk really read the mounted system
    assert str(control) in report["hits"].get(PLANTED, [])  # also seen through the /lib link
    leaked = {n: paths for n, paths in report["hits"].items() if n != PLANTED}
    assert leaked == {}


def test_walk_finds_installs_checkouts_caches_and_archives(tmp_path: Path):
    site = tmp_path / "venv/lib/python3.11/site-packages"
    (site / "envs/code/data").mkdir(parents=True)
    (site / "tools").mkdir()
    checkout = tmp_path / "src/turngym"
    (checkout / "envs/repo_fix").mkdir(parents=True)
    (checkout / "pyproject.toml").write_text("")
    (checkout / "build/lib/envs/code").mkdir(parents=True)
    pycache = tmp_path / "pycache/usr/lib/python3/dist-packages/envs/repo_fix/__pycache__"
    pycache.mkdir(parents=True)
    (tmp_path / "wheels").mkdir()
    (tmp_path / "wheels/turngym-0.1.0-py3-none-any.whl").write_bytes(b"PK")
    (tmp_path / "other/envs/gym").mkdir(parents=True)  # someone else's `envs`: left visible
    (tmp_path / "lib/envs/code").mkdir(parents=True)  # an `envs` outside any package dir
    found = hidden_paths((str(tmp_path),))
    assert set(found.dirs) == {
        str(site),  # third-party packages: the sandbox's `python -I -S` never imports them
        str(checkout),  # the whole source tree: build/, tests and .git go with it
        str(tmp_path / "pycache/usr/lib/python3/dist-packages"),
        str(tmp_path / "lib/envs"),
    }
    assert found.files == (str(tmp_path / "wheels/turngym-0.1.0-py3-none-any.whl"),)


def test_walk_covers_archives_by_content_and_copies_by_digest(tmp_path: Path):
    import gzip

    secret = (REPO / "envs/code/data/problems.jsonl").read_bytes()
    (tmp_path / "plain.txt").write_text("nothing to see")
    (tmp_path / "data.bin").write_bytes(gzip.compress(b"x" * 100))  # an archive under any name
    (tmp_path / "tool").write_bytes(b"#!/usr/bin/env python3\n" + b"PK\x03\x04" + b"PK\x05\x06" + b"\0" * 18)
    (tmp_path / "copy.dat").write_bytes(secret)
    (tmp_path / "near.dat").write_bytes(secret[:-1] + b"?")  # same size, other content
    found = hidden_paths((str(tmp_path),))
    assert found.files == tuple(str(tmp_path / n) for n in ("copy.dat", "data.bin", "tool"))


def test_a_file_rewritten_into_an_archive_is_covered_at_the_next_run(tmp_path: Path):
    hidden.clear_cache()
    (tmp_path / "later").write_text("plain for now")
    _backdate(tmp_path)
    os.utime(tmp_path / "later", (1e9, 1e9))
    assert hidden_paths((str(tmp_path),)).files == ()
    (tmp_path / "later").write_bytes(b"\xfd7zXZ\x00" + b"\0" * 32)  # in place: no entry added
    assert hidden_paths((str(tmp_path),)).files == (str(tmp_path / "later"),)
    hidden.clear_cache()


LATE_SECRET = "turngym-late-install-secret-7d2e41"
READ = r"""
import sys
path = sys.stdin.read()
try:
    print(open(path).read())
except OSError as exc:
    print('unreadable', type(exc).__name__)
"""


def test_an_install_made_after_the_first_sandbox_is_hidden_from_the_next():
    """The attack: a process starts a sandbox (the walk runs), then turngym is installed under /usr;
    the same process's next sandbox must not read the new copy's hidden tests."""
    from tools.sandbox import LocalSandbox

    box = LocalSandbox(timeout_s=60)
    late = Path(f"/usr/local/lib/turngym-late-install-{os.getpid()}")
    secret = late / "lib/python3.11/site-packages/envs/code/data/problems.jsonl"
    try:
        first = box.run(READ, stdin=str(secret))
        assert first.status == "ok" and "unreadable" in first.stdout, first
        secret.parent.mkdir(parents=True)
        (secret.parents[2] / "__init__.py").write_text("")
        secret.write_text(LATE_SECRET)
        for path in [late, *secret.parents[: len(secret.relative_to(late).parts) - 1]]:
            path.chmod(0o755)
        secret.chmod(0o644)
        # The control: the file is there and readable to anyone outside the sandbox.
        assert secret.read_text() == LATE_SECRET
        second = box.run(READ, stdin=str(secret))
    finally:
        subprocess.run(["rm", "-rf", str(late)], check=False)
    assert second.status == "ok", second
    assert LATE_SECRET not in second.stdout and "unreadable" in second.stdout


def _backdate(root: Path) -> None:
    # Directories last changed an hour ago, as on a settled system: the walk is then reused.
    for path in [root, *(p for p in root.rglob("*") if p.is_dir())]:
        os.utime(path, (1e9, 1e9))


@pytest.fixture(params=["inotify", "mtimes"])
def change_check(request, monkeypatch):
    """Both ways a walk notices a change: inotify, and the mtimes used when the watch limit is reached."""
    hidden.clear_cache()
    if request.param == "mtimes":
        monkeypatch.setattr(hidden, "_new_watch", lambda: None)
    yield request.param
    hidden.clear_cache()


def test_walk_sees_a_copy_added_after_the_first_walk_and_one_removed(tmp_path: Path, change_check):
    (tmp_path / "deep/a/b/lib/other").mkdir(parents=True)
    _backdate(tmp_path)
    assert hidden_paths((str(tmp_path),)).dirs == ()
    (tmp_path / "deep/a/b/lib/envs/repo_fix").mkdir(parents=True)
    assert hidden_paths((str(tmp_path),)).dirs == (str(tmp_path / "deep/a/b/lib/envs"),)
    _backdate(tmp_path)
    assert hidden_paths((str(tmp_path),)).dirs == (str(tmp_path / "deep/a/b/lib/envs"),)
    (tmp_path / "deep/a/b/turngym-0.2.tar.gz").write_bytes(b"")
    assert hidden_paths((str(tmp_path),)).files == (str(tmp_path / "deep/a/b/turngym-0.2.tar.gz"),)
    _backdate(tmp_path)
    subprocess.run(["rm", "-rf", str(tmp_path / "deep/a/b/lib/envs")], check=True)
    assert hidden_paths((str(tmp_path),)).dirs == ()


def test_an_unchanged_tree_is_walked_once(tmp_path: Path, monkeypatch, change_check):
    (tmp_path / "lib/envs/code").mkdir(parents=True)
    _backdate(tmp_path)
    first = hidden_paths((str(tmp_path),))
    walks = []
    real_scan = hidden._scan
    monkeypatch.setattr(hidden, "_scan", lambda roots: walks.append(roots) or real_scan(roots))
    assert hidden_paths((str(tmp_path),)) == first and walks == []
