"""LocalSandbox: languages, limits, and the hostile-code battery (nothing left behind)."""

from __future__ import annotations

import asyncio
import glob
import os
import shutil
import tempfile
import time

import pytest

from tools.sandbox import LocalSandbox, PythonSession
from tools.sandbox.deferred import flush
from tools.sandbox.isolation import UidSlot, bwrap_path

MODES = ["bwrap", "none"] if bwrap_path() else ["none"]


@pytest.fixture(autouse=True)
def private_uid_range(monkeypatch):
    """A uid range of this test process only, so other sandboxes on the machine do not count as leftovers."""
    monkeypatch.setattr(UidSlot, "BASE", 300_000 + (os.getpid() % 1000) * 64)
    monkeypatch.setattr(UidSlot, "COUNT", 64)


def _live_sandbox_processes() -> list[int]:
    """Non-zombie processes owned by a sandbox uid (SIGKILLed ones get up to 30 s to finish dying).

    A generous bound, not a speed check: on a loaded machine the kernel may take a while to reap them.
    """
    deadline = time.monotonic() + 30
    while found := _scan_sandbox_processes():
        if time.monotonic() > deadline:
            return found
        time.sleep(0.01)
    return []


def _scan_sandbox_processes() -> list[int]:
    found = []
    lo, hi = UidSlot.BASE, UidSlot.BASE + UidSlot.COUNT
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            if not lo <= entry.stat().st_uid < hi:
                continue
            with open(f"{entry.path}/stat", "rb") as fh:
                state = fh.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state not in (b"Z", b"X"):
            found.append(int(entry.name))
    return found


def _workdirs() -> set[str]:
    """Work dirs of this test's uid range (other processes on the machine may be running sandboxes too),
    once the runs' teardown handed to the housekeeping thread is done."""
    flush()
    lo, hi = UidSlot.BASE, UidSlot.BASE + UidSlot.COUNT
    found = set()
    for path in glob.glob(os.path.join(tempfile.gettempdir(), "turngym-sbx-*")):
        try:
            uid = os.stat(path).st_uid
        except OSError:
            continue
        if lo <= uid < hi or os.geteuid() != 0:
            found.add(path)
    return found


@pytest.fixture(params=MODES)
def sandbox(request):
    before = _workdirs()
    sb = LocalSandbox(isolation=request.param, timeout_s=5, memory_mb=256)
    yield sb
    assert _live_sandbox_processes() == []
    assert _workdirs() - before == set()


def test_print_and_exit_codes(sandbox):
    r = sandbox.run("print(1 + 1)")
    assert (r.status, r.stdout, r.exit_code) == ("ok", "2\n", 0)
    r = sandbox.run("import sys; print('bye', file=sys.stderr); sys.exit(3)")
    assert (r.status, r.exit_code, r.stderr, r.message) == ("error", 3, "bye\n", "exited with code 3")


def test_stdin_files_and_fetch(sandbox):
    r = sandbox.run(
        "import sys\ndata = open('data/in.txt').read()\nopen('out.txt', 'w').write(data.upper())\nprint(sys.stdin.read()[::-1])",
        stdin="abc",
        files={"data/in.txt": "hello"},
        fetch_files=["out.txt", "missing.txt"],
    )
    assert r.stdout == "cba\n"
    assert r.files == {"out.txt": b"HELLO"}


def test_file_paths_cannot_escape(sandbox):
    r = sandbox.run("print(1)", files={"../escape.txt": "x"})
    assert r.status == "sandbox_error" and "leaves the sandbox" in r.message


def test_bash_and_unknown_language(sandbox):
    r = sandbox.run("echo $((6 * 7)); echo oops >&2; exit 4", "bash")
    assert (r.stdout, r.stderr, r.exit_code) == ("42\n", "oops\n", 4)
    r = sandbox.run("x", "cobol")
    assert r.status == "sandbox_error" and "unsupported language 'cobol'" in r.message


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("gcc") is None, reason="no C compiler")
def test_c_and_cpp(sandbox):
    r = sandbox.run(
        '#include <stdio.h>\nint main(){int x; scanf("%d", &x); printf("%d\\n", x * 2); return 0;}',
        "c",
        stdin="21",
    )
    assert (r.status, r.stdout) == ("ok", "42\n")
    r = sandbox.run("#include <iostream>\nint main(){std::cout << 7 << std::endl;}", "cpp")
    assert (r.status, r.stdout) == ("ok", "7\n")
    r = sandbox.run("int main( {", "c")
    assert r.status == "compile_error" and "error" in r.compile_output


HOSTILE = {
    "infinite_loop": ("while True:\n    pass", "timeout"),
    "fork_bomb": (
        "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass",
        "timeout",
    ),
    "memory_bomb": ("a = []\nwhile True:\n    a.append(bytearray(10**7))", "error"),
    "huge_output": (
        "import sys\nchunk = 'x' * (1 << 20)\nfor _ in range(100):\n    sys.stdout.write(chunk)",
        "ok",
    ),
    "sys_exit": ("import sys\nsys.exit(7)", "error"),
    "segfault": ("import ctypes\nctypes.string_at(0)", "error"),
    "background_child": ("import subprocess\nsubprocess.Popen(['sleep', '300'])\nprint('started')", "ok"),
    "daemonized_grandchild": (
        "import os, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n        time.sleep(300)\n    os._exit(0)\nprint('done')",
        "ok",
    ),
}


SLOW_CASES = {"infinite_loop", "fork_bomb"}  # these run into the 3 s timeout


@pytest.mark.timeout(300)  # a hang fails here; how fast the limit acts is bench/sandbox.py's business
@pytest.mark.parametrize(
    "case", [pytest.param(c, marks=pytest.mark.slow) if c in SLOW_CASES else c for c in sorted(HOSTILE)]
)
def test_hostile_code_ends_cleanly(sandbox, case):
    code, status = HOSTILE[case]
    r = sandbox.run(code, timeout_s=3)
    # Ended by its own limit: the status says which, and the fixture checks that no process of the
    # run is left alive and no work dir is left behind (the kill happened).
    assert r.status == status, r
    if case == "huge_output":
        assert r.truncated and len(r.stdout) == sandbox.max_output_bytes and "was cut" in r.message
    if case == "memory_bomb":
        assert "MemoryError" in r.stderr
    if case == "segfault":
        assert "SIGSEGV" in r.message
    if case == "sys_exit":
        assert r.exit_code == 7
    if status == "timeout":
        # Whichever limit acted first (3 s of wall clock, or 3 CPU seconds under a cgroup) depends on
        # the machine's load; both must say so and kill.
        assert r.message.startswith("timed out") and "3s" in r.message and "killed" in r.message, r


def test_home_dir_and_host_files_untouched(sandbox):
    target = os.path.expanduser("~/turngym_sandbox_probe.txt")
    code = (
        "import os\n"
        "open(os.path.expanduser('~/mine.txt'), 'w').write('ok')\n"
        f"try:\n    open({target!r}, 'w').write('pwned')\n    print('WROTE')\nexcept OSError as e:\n    print('denied', type(e).__name__)\n"
    )
    r = sandbox.run(code)
    assert "denied" in r.stdout and "WROTE" not in r.stdout
    assert not os.path.exists(target)


def test_secrets_not_readable(sandbox, monkeypatch):
    monkeypatch.setenv("TURNGYM_FAKE_SECRET", "hunter2")
    r = sandbox.run(
        "import os\nprint(sorted(os.environ))\ntry:\n    print(open('/etc/shadow').read())\nexcept OSError as e:\n    print('shadow:', type(e).__name__)"
    )
    assert "hunter2" not in r.stdout and "TURNGYM_FAKE_SECRET" not in r.stdout
    assert "shadow: " in r.stdout and "root:" not in r.stdout


def test_kill_parent_does_not_harm_host(sandbox):
    r = sandbox.run(
        "import os, signal\nfor pid in (os.getppid(), 1):\n    try:\n        os.kill(pid, signal.SIGKILL)\n    except OSError as e:\n        print(type(e).__name__)\nprint('still here')"
    )
    assert r.status in ("ok", "error")
    assert os.getpid() > 0  # this test process survived


@pytest.mark.skipif("bwrap" not in MODES, reason="bubblewrap not available")
def test_network_is_unreachable_under_bwrap():
    sb = LocalSandbox(isolation="bwrap", timeout_s=5)
    r = sb.run(
        "import socket\ntry:\n    socket.create_connection(('1.1.1.1', 80), timeout=2)\n    print('CONNECTED')\nexcept OSError as e:\n    print('blocked', e.errno)"
    )
    assert "blocked" in r.stdout and "CONNECTED" not in r.stdout


def test_async_run_concurrently():
    sb = LocalSandbox(timeout_s=5)

    async def main():
        return await asyncio.gather(*(sb.arun(f"print({i} * 2)") for i in range(6)))

    results = asyncio.run(main())
    assert [r.stdout for r in results] == [f"{i * 2}\n" for i in range(6)]


def test_python_session_keeps_state_and_recovers():
    with PythonSession(LocalSandbox(timeout_s=5)) as s:
        assert s.run("x = 40").status == "ok"
        assert s.run("x + 2").stdout == "42\n"
        bad = s.run("1 / 0")
        assert bad.status == "error" and "ZeroDivisionError" in bad.stdout and "_driver" not in bad.stdout
        assert s.run("print('a'); import sys; print('b', file=sys.stderr); x").stdout == "a\nb\n40\n"
        t = s.run("while True: pass", timeout_s=1)
        assert t.status == "timeout" and "variables are lost" in t.message
        after = s.run("'x' in globals()")
        assert after.stdout.endswith("False\n") and "fresh interpreter" in after.stdout
    assert _live_sandbox_processes() == []


@pytest.mark.parametrize(
    "case", [pytest.param("fork_bomb", marks=pytest.mark.slow), "daemonized_grandchild", "memory_bomb"]
)
def test_preexec_fallback_without_launcher(monkeypatch, case):
    """Without the C launcher (no compiler), rlimits and the uid drop go through a preexec function."""
    from tools.sandbox import spawn

    monkeypatch.setattr(spawn, "_launcher", [None])
    before = _workdirs()
    sb = LocalSandbox(isolation=MODES[0], timeout_s=3, memory_mb=256)
    code, status = HOSTILE[case]
    assert sb.run(code).status == status
    assert sb.run("import os; print(os.getuid() != 0)").stdout == "True\n"
    assert _live_sandbox_processes() == []
    assert _workdirs() - before == set()
