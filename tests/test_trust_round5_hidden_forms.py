"""Round 5, item 8: the hidden tests stay unreadable in a real sandbox whatever form a copy of them
takes and wherever under /usr it sits.

The red team read them in six forms the path mask did not know: a `.pyz` zipapp, a conda package, a
`.tar.bz2`, a `.tar.xz`, a `problems.jsonl` copied under share/ and a vendored (renamed) copy. Each is
built here from the real problems file and planted twice as root: in a data tree (/usr/share, out of
the sandbox's view) and inside a code directory the sandbox does bind (where the content rules of
`tools.sandbox.hidden` cover it). Sandboxed code then tries to read every copy.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
import zipfile
from pathlib import Path

import pytest

from tools.sandbox.bwrap import bwrap_path
from tools.sandbox.local import default_python

REPO = Path(__file__).resolve().parents[1]
PROBLEMS = REPO / "envs/code/data/problems.jsonl"
FORMS = ("pyz", "conda", "tar.bz2", "tar.xz", "share-copy", "vendored")
PLACES = ("data-tree", "code-dir")
CONTROL = "turngym-forms-control-3b7e"

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or bwrap_path() is None or shutil.which("zstd") is None,
    reason="needs root (to plant under /usr), bubblewrap and zstd (for the conda package)",
)

READ = r"""
import hashlib, json, sys
out = {}
for path in json.loads(sys.stdin.read()):
    try:
        data = open(path, 'rb').read()
        out[path] = {'state': 'read', 'size': len(data), 'sha': hashlib.sha256(data).hexdigest(),
                     'text': data[:64].decode('latin-1')}
    except OSError as exc:
        out[path] = {'state': type(exc).__name__}
print(json.dumps(out))
"""


def _needle() -> str:
    """The longest hidden test of the bundled problems: the text a reader of any copy would get."""
    rows = [json.loads(line) for line in PROBLEMS.read_text().splitlines() if line.strip()]
    return max((t for r in rows for t in r["tests"] if isinstance(t, str)), key=len)


def _tar(mode: str, members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode) as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _zstd(data: bytes, decompress: bool = False) -> bytes:
    flags = ["-d"] if decompress else ["-q", "-19"]
    return subprocess.run(["zstd", *flags, "-c"], input=data, capture_output=True, check=True).stdout


def _build(form: str, dest: Path) -> Path:
    """One form of the hidden data under `dest`; returns the file holding it."""
    data = PROBLEMS.read_bytes()
    if form == "pyz":
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
            zf.writestr("__main__.py", "import envs\n")
            zf.writestr("envs/code/data/problems.jsonl", data)
        path = dest / "bin/trainer.pyz"
        payload = b"#!/usr/bin/env python3\n" + buf.getvalue()
    elif form == "conda":
        pkg = _zstd(_tar("w", {"lib/python3.11/site-packages/graders/data/problems.jsonl": data}))
        info = _zstd(_tar("w", {"info/index.json": b'{"name": "graders"}'}))
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as zf:
            zf.writestr("metadata.json", '{"conda_pkg_format_version": 2}')
            zf.writestr("pkg-graders-0.1.0-py_0.tar.zst", pkg)
            zf.writestr("info-graders-0.1.0-py_0.tar.zst", info)
        path, payload = dest / "pkgs/graders-0.1.0-py_0.conda", buf.getvalue()
    elif form in ("tar.bz2", "tar.xz"):
        path = dest / f"dist/grading-data.{form}"
        payload = _tar("w:" + form.split(".")[1], {"grading/problems.jsonl": data})
    elif form == "share-copy":
        path, payload = dest / "share/turngym/problems.jsonl", data
    else:  # vendored: the code package copied into another app under a new name
        vendored = dest / "someapp/_vendor/turngym_code"
        for name in ("__init__.py", "grader.py", "problems.py"):
            (vendored / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(REPO / "envs/code" / name, vendored / name)
        path, payload = vendored / "data/problems.jsonl", data
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(payload)
    return path


def _decoded(form: str, payload: bytes) -> bytes:
    """What a reader gets out of the form's bytes (the host-side control that the copy is a copy)."""
    if form == "pyz":
        return zipfile.ZipFile(io.BytesIO(payload)).read("envs/code/data/problems.jsonl")
    if form == "conda":
        inner = zipfile.ZipFile(io.BytesIO(payload)).read("pkg-graders-0.1.0-py_0.tar.zst")
        with tarfile.open(fileobj=io.BytesIO(_zstd(inner, decompress=True))) as tar:
            return tar.extractfile("lib/python3.11/site-packages/graders/data/problems.jsonl").read()
    if form in ("tar.bz2", "tar.xz"):
        with tarfile.open(fileobj=io.BytesIO(payload)) as tar:
            return tar.extractfile("grading/problems.jsonl").read()
    return payload


def _code_dir() -> str:
    """A directory every sandbox binds: the one holding its Python's standard library."""
    ask = "import os; print(os.path.dirname(os.__file__))"
    done = subprocess.run(
        [default_python(), "-I", "-S", "-c", ask], capture_output=True, text=True, check=True
    )
    return os.path.realpath(done.stdout.strip())


def _open_up(root: Path) -> None:
    # As a package manager leaves files: readable by every uid (the sandbox runs as a private one).
    for path in [root, *root.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)


@pytest.fixture(scope="module")
def attempt():
    """Plant every form in both places, then read them all from one real sandbox run."""
    from tools.sandbox import LocalSandbox

    roots = {
        "data-tree": Path(tempfile.mkdtemp(prefix="turngym-forms-", dir="/usr/share")),
        "code-dir": Path(tempfile.mkdtemp(prefix="turngym-forms-", dir=_code_dir())),
    }
    try:
        planted = {(form, place): _build(form, root) for place, root in roots.items() for form in FORMS}
        control = roots["code-dir"] / "control.txt"
        control.write_text(CONTROL)
        for root in roots.values():
            _open_up(root)
        paths = [str(p) for p in planted.values()] + [str(control)]
        result = LocalSandbox(timeout_s=120).run(READ, stdin=json.dumps(paths), timeout_s=120)
        assert result.status == "ok", result
        seen = json.loads(result.stdout)
        yield {key: (path.read_bytes(), seen[str(path)]) for key, path in planted.items()}, seen[str(control)]
    finally:
        for root in roots.values():
            shutil.rmtree(root, ignore_errors=True)


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("form", FORMS)
def test_hidden_tests_are_unreadable_in_every_form(attempt, form: str, place: str):
    planted, control = attempt
    payload, seen = planted[(form, place)]
    # The controls: the planted file holds the hidden tests, and the code dir is in the sandbox's view.
    assert _needle().encode() in _decoded(form, payload)
    assert control["state"] == "read" and control["text"] == CONTROL
    got = seen.get("sha")
    assert got != hashlib.sha256(payload).hexdigest(), f"{form} in the {place} was read whole: {seen}"
    assert seen["state"] != "read" or seen["size"] == 0, seen
