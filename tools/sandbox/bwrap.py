"""bubblewrap: whether it isolates fully here (`bwrap_problem`, `bwrap_path`) and its command line (`bwrap_argv`)."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading

from tools.sandbox.code_view import TOP_LINKS, code_view
from tools.sandbox.hidden import hidden_paths
from tools.sandbox.limits import IS_ROOT, Limits
from tools.sandbox.spawn import SECCOMP_FD_SLOT, spawn

SANDBOX_DIR = "/sandbox"  # where the private work dir appears inside bubblewrap


_bwrap_probe: dict[str, str] = {}
_probe_lock = threading.Lock()


def bwrap_problem(exe: str | None = None) -> str:
    """Why bubblewrap cannot give full isolation here (empty when it can): missing, too old for
    --disable-userns, or unable to create namespaces / load the seccomp filter (checked once per path)."""
    exe = exe or shutil.which("bwrap")
    if exe is None:
        return "bubblewrap (bwrap) is not installed"
    if not os.access(exe, os.X_OK):
        return f"bubblewrap not found at {exe}"
    from tools.sandbox.seccomp import unavailable_reason

    reason = unavailable_reason()
    if reason:
        return reason
    with _probe_lock:
        if exe not in _bwrap_probe:
            _bwrap_probe[exe] = _probe(exe)
        return _bwrap_probe[exe]


def _probe(exe: str) -> str:
    probe = bwrap_argv(exe, "/tmp", ["/bin/true"], bind_workdir=False)
    try:
        proc = spawn(
            probe,
            cwd="/",
            env={"PATH": "/usr/bin:/bin"},
            limits=Limits(cpu_s=10, memory_mb=0),
            uid=65534 if IS_ROOT else None,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        _, err = proc.communicate(timeout=10)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"bubblewrap at {exe} could not start: {exc}"
    if proc.returncode != 0:
        text = err.decode(errors="replace").strip().splitlines()
        return f"bubblewrap at {exe} cannot create the sandbox: {text[-1] if text else proc.returncode}"
    return ""


def bwrap_path(exe: str | None = None) -> str | None:
    """bubblewrap's path if it is installed and gives full isolation here (checked once), else None."""
    exe = exe or shutil.which("bwrap")
    return exe if exe and not bwrap_problem(exe) else None


def mounted_paths(extra_ro: tuple[str, ...] = ()) -> list[str]:
    """The host paths bwrap_argv binds read-only into the sandbox (those that exist here): the system's
    code directories and `extra_ro` (`tools.sandbox.code_view`), never its data trees."""
    return code_view(None, extra_ro)


def secret_masks(mounted: tuple[str, ...]) -> list[str]:
    """bubblewrap arguments covering every copy of turngym's hidden data under the mounted paths: an
    empty read-only tmpfs over each directory, /dev/null over each file (`tools.sandbox.hidden`)."""
    found = hidden_paths(mounted)
    argv: list[str] = []
    for path in found.dirs:
        argv += ["--size", "4096", "--tmpfs", path, "--remount-ro", path]
    for path in found.files:
        argv += ["--ro-bind", "/dev/null", path]
    return argv


def bwrap_argv(
    exe: str,
    workdir: str,
    command: list[str],
    extra_ro: tuple[str, ...] = (),
    bind_workdir: bool = True,
    *,
    tmp_mb: int = 256,
    shm_mb: int = 64,
    hardened: bool = True,
) -> list[str]:
    """bubblewrap command: no network, the system's code read-only (`mounted_paths`) with turngym's
    hidden data covered (`secret_masks`), size-capped private /tmp and /dev/shm, the work dir, own PID namespace; `hardened`
    adds --disable-userns and the seccomp filter (the default)."""
    argv = [exe, "--unshare-all", "--die-with-parent", "--new-session"]
    if hardened:
        # --unshare-all only *tries* a user namespace; --disable-userns needs one for sure.
        argv += ["--unshare-user", "--disable-userns", "--seccomp", SECCOMP_FD_SLOT]
    mounted = mounted_paths(extra_ro)
    for path in mounted:
        if os.path.islink(path):
            # Bound, a link would show its whole target (`/usr/lib64 -> lib` is all of /usr/lib).
            argv += ["--symlink", os.readlink(path), path]
        else:
            argv += ["--ro-bind", path, path]
    for path in TOP_LINKS:
        if os.path.islink(path):
            argv += ["--symlink", os.readlink(path), path]
    argv += secret_masks(tuple(p for p in mounted if not os.path.islink(p)))
    argv += ["--proc", "/proc", "--dev", "/dev", "--size", str(tmp_mb * 1024 * 1024), "--tmpfs", "/tmp"]
    # --dev's own /dev/shm is a tmpfs of half the host's RAM: replace it with a capped one.
    argv += ["--size", str(shm_mb * 1024 * 1024), "--tmpfs", "/dev/shm"]
    if bind_workdir:
        argv += ["--bind", workdir, SANDBOX_DIR, "--chdir", SANDBOX_DIR]
    argv += ["--remount-ro", "/", "--", *command]
    return argv
