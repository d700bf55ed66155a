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
        # The control: the search finds a string planted in a visible place beside the install.
        (venv / "planted.txt").write_text(PLANTED)
        (venv / "planted.txt").chmod(0o644)
        assert (site / "envs/code/data/problems.jsonl").is_file()
        done = subprocess.run(
            [str(venv / "bin/python"), "-c", DRIVER, str(site), SEARCH, json.dumps(needles)],
            env=deps_env(venv),
            cwd="/",
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        result = json.loads(done.stdout.strip().splitlines()[-1])
        assert result["status"] == "ok", result
        report = json.loads(result["stdout"])
    assert report["read"] > 1000  # the walk really read the mounted system
    assert report["hits"].get(PLANTED) == [str(venv / "planted.txt")]
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
    found = hidden_paths((str(tmp_path),))
    assert set(found.dirs) == {
        str(site / "envs"),
        str(checkout),  # the whole source tree: build/, tests and .git go with it
        str(tmp_path / "pycache/usr/lib/python3/dist-packages/envs"),
    }
    assert found.files == (str(tmp_path / "wheels/turngym-0.1.0-py3-none-any.whl"),)


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
    (tmp_path / "deep/a/b/site-packages/other").mkdir(parents=True)
    _backdate(tmp_path)
    assert hidden_paths((str(tmp_path),)).dirs == ()
    (tmp_path / "deep/a/b/site-packages/envs/repo_fix").mkdir(parents=True)
    assert hidden_paths((str(tmp_path),)).dirs == (str(tmp_path / "deep/a/b/site-packages/envs"),)
    _backdate(tmp_path)
    assert hidden_paths((str(tmp_path),)).dirs == (str(tmp_path / "deep/a/b/site-packages/envs"),)
    (tmp_path / "deep/a/b/turngym-0.2.tar.gz").write_bytes(b"")
    assert hidden_paths((str(tmp_path),)).files == (str(tmp_path / "deep/a/b/turngym-0.2.tar.gz"),)
    _backdate(tmp_path)
    subprocess.run(["rm", "-rf", str(tmp_path / "deep/a/b/site-packages/envs")], check=True)
    assert hidden_paths((str(tmp_path),)).dirs == ()


def test_an_unchanged_tree_is_walked_once(tmp_path: Path, monkeypatch, change_check):
    (tmp_path / "site-packages/envs/code").mkdir(parents=True)
    _backdate(tmp_path)
    first = hidden_paths((str(tmp_path),))
    walks = []
    real_scan = hidden._scan
    monkeypatch.setattr(hidden, "_scan", lambda roots: walks.append(roots) or real_scan(roots))
    assert hidden_paths((str(tmp_path),)) == first and walks == []
