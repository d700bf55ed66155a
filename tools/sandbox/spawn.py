"""`spawn`: start a sandboxed command in a new session, in its cgroups, with rlimits and a private uid.

The small C launcher (built once) applies them between vfork and exec; without a compiler a preexec
function does the same from a full fork.
"""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import subprocess
import tempfile
import threading

from tools.sandbox.limits import Limits, limiter

_LAUNCHER_SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "launcher.c")
_launcher: list[str | None] = []
_launcher_lock = threading.Lock()


def launcher_path() -> str | None:
    """The compiled exec helper (built once with the C compiler, cached in a root-only dir), or None."""
    with _launcher_lock:
        if _launcher:
            return _launcher[0]
        _launcher.append(_build_launcher())
        return _launcher[0]


def _build_launcher() -> str | None:
    if os.environ.get("TURNGYM_SANDBOX_NO_LAUNCHER"):
        return None
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None or not os.path.exists(_LAUNCHER_SRC):
        return None
    import hashlib

    with open(_LAUNCHER_SRC, "rb") as fh:
        digest = hashlib.sha256(fh.read()).hexdigest()[:16]
    cache = os.path.join(tempfile.gettempdir(), f"turngym-sandbox-{os.geteuid()}")
    os.makedirs(cache, mode=0o700, exist_ok=True)
    st = os.stat(cache)
    if st.st_uid != os.geteuid() or st.st_mode & 0o022:
        return None  # someone else could swap the binary we would run as root
    target = os.path.join(cache, f"launcher-{digest}")
    if os.path.exists(target):
        return target
    tmp = f"{target}.{os.getpid()}.tmp"
    try:
        done = subprocess.run([cc, "-O2", "-o", tmp, _LAUNCHER_SRC], capture_output=True, timeout=60)
        if done.returncode != 0:
            return None
        os.chmod(tmp, 0o700)
        os.replace(tmp, target)
        return target
    except (OSError, subprocess.SubprocessError):
        return None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


# bwrap_argv puts this where the seccomp program's fd number goes; spawn() opens a fresh fd per run (bwrap
# reads it to EOF) and writes its number in.
SECCOMP_FD_SLOT = "@seccomp-fd@"


def launcher_limit_fields(limits: Limits, uid: int | None) -> list[str]:
    """The launcher's uid and rlimit arguments (uid, CPU, AS, NPROC, FSIZE, NOFILE; -1 / 0 for none)."""
    values = dict(limits.rlimits())
    return [
        str(uid if uid is not None else -1),
        str(values[resource.RLIMIT_CPU]),
        str(values.get(resource.RLIMIT_AS, 0)),
        str(values.get(resource.RLIMIT_NPROC, 0)),
        str(values[resource.RLIMIT_FSIZE]),
        str(values[resource.RLIMIT_NOFILE]),
    ]


def spawn(
    argv: list[str],
    *,
    cwd: str,
    env: dict[str, str],
    limits: Limits,
    uid: int | None,
    stdin: int,
    stdout: int,
    stderr: int,
    cgroup_procs: tuple[str, ...] = (),
) -> subprocess.Popen:
    """Start `argv` in a new session, inside the given cgroups, with rlimits and, as root, the private uid.

    Uses the small C launcher when it could be built (Python then spawns with vfork); otherwise a
    preexec function (forces a full fork of this process: a few ms slower).
    """
    pass_fds: tuple[int, ...] = ()
    if SECCOMP_FD_SLOT in argv:
        from tools.sandbox.seccomp import program_fd

        fd = program_fd()
        pass_fds = (fd,)
        argv = [str(fd) if a == SECCOMP_FD_SLOT else a for a in argv]
    if any(":" in p for p in cgroup_procs):
        raise ValueError(f"cgroup paths must not contain ':': {cgroup_procs}")
    try:
        launcher = launcher_path()
        if launcher is not None:
            command = [
                launcher,
                *launcher_limit_fields(limits, uid),
                ":".join(cgroup_procs) or "-",
                "--",
                *argv,
            ]
            return subprocess.Popen(
                command,
                stdin=stdin,
                stdout=stdout,
                stderr=stderr,
                cwd=cwd,
                env=env,
                start_new_session=True,
                pass_fds=pass_fds,
            )
        return subprocess.Popen(
            argv,
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            cwd=cwd,
            env=env,
            start_new_session=True,
            pass_fds=pass_fds,
            preexec_fn=limiter(limits, uid, cgroup_procs),
        )
    finally:
        for fd in pass_fds:
            os.close(fd)
