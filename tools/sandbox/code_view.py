"""What a bubblewrap sandbox sees of the host: the system's code, never its data.

The sandbox binds the directories that run and build code, and nothing else of /usr: executables
(`/usr/bin`, `/usr/sbin`), the libraries the loader and the linker search (the multiarch directories of
/usr/lib, `/usr/lib64`), the C toolchain (`/usr/lib/gcc`, `/usr/libexec`, `/usr/include`), the locale
and time-zone files, and the sandbox Python's own standard library (its `sys.path` under `-I -S`, which
has no site-packages). Data trees (`/usr/share`, `/usr/src`, all of `/usr/local` but the sandbox
Python's own files, `/opt`) and other programs' trees under /usr/lib (`python3/dist-packages`, `jvm`,
`node_modules`, ...) are not there at all. So a copy of a grader's data in a place nobody listed, in a
form nobody listed (a zipapp, a conda package, a tarball, a copied or vendored problems file), is out of
view. What is in view still goes through `tools.sandbox.hidden` (package dirs, archives and exact copies
of the hidden files are covered there).
"""

from __future__ import annotations

import json
import os
import subprocess
import threading

# Directly under /usr: what runs and builds code, on Debian-like (multiarch) and Fedora-like (lib64)
# layouts alike; those that do not exist are skipped.
_USR_DIRS = ("/usr/bin", "/usr/sbin", "/usr/libexec", "/usr/include", "/usr/lib64", "/usr/lib32")
# Under /usr/lib: the compiler, the linker's plugins, the preprocessor link and the locales.
_USR_LIB_NAMES = ("gcc", "gcc-cross", "bfd-plugins", "compat-ld", "gold-ld", "cpp", "locale")
# Data a program may read while it runs: time zones only.
_DATA_DIRS = ("/usr/share/zoneinfo",)
# Loader files from /etc (not /etc whole).
_ETC = (
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/alternatives",
    "/etc/localtime",
)
TOP_LINKS = ("/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32")

_PROBE = (
    "import json, os, sys, sysconfig\n"
    "lib = sysconfig.get_config_var('LDLIBRARY') if sysconfig.get_config_var('Py_ENABLE_SHARED') else ''\n"
    "libdir = sysconfig.get_config_var('LIBDIR') or ''\n"
    "print(json.dumps({'path': [p for p in sys.path if os.path.isdir(p)],\n"
    "                  'lib': os.path.join(libdir, lib) if lib and libdir else ''}))\n"
)
_python_parts: dict[str, tuple[str, ...]] = {}
_lock = threading.Lock()


def _multiarch_dirs() -> list[str]:
    try:
        names = sorted(os.listdir("/usr/lib"))
    except OSError:
        return []
    return [f"/usr/lib/{n}" for n in names if "-linux-" in n and os.path.isdir(f"/usr/lib/{n}")]


def python_parts(python: str) -> tuple[str, ...]:
    """The files and directories `python -I -S` needs: its executable, its standard library directories
    and its shared libpython (asked of the interpreter once per path; empty if it cannot be run)."""
    real = os.path.realpath(python)
    with _lock:
        if real in _python_parts:
            return _python_parts[real]
    try:
        done = subprocess.run(
            [real, "-I", "-S", "-c", _PROBE],
            capture_output=True,
            text=True,
            timeout=30,
            env={"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"},
        )
        found = json.loads(done.stdout) if done.returncode == 0 else {"path": [], "lib": ""}
    except (OSError, subprocess.SubprocessError, ValueError):
        found = {"path": [], "lib": ""}
    parts = [real, *(os.path.realpath(p) for p in found["path"])]
    if found["lib"] and os.path.exists(found["lib"]):
        parts.append(os.path.realpath(found["lib"]))
    result = tuple(dict.fromkeys(parts))
    with _lock:
        _python_parts[real] = result
    return result


def code_view(python: str | None = None, extra_ro: tuple[str, ...] = ()) -> list[str]:
    """The host paths a sandbox binds read-only (those that exist here), outermost first: /usr's code
    directories, the loader files of /etc, `python`'s own files (`python_parts`) and `extra_ro`. A path
    inside another one listed is dropped (the outer bind shows it)."""
    candidates = [*_USR_DIRS, *_multiarch_dirs(), *(f"/usr/lib/{n}" for n in _USR_LIB_NAMES)]
    if not _multiarch_dirs() and os.path.exists("/usr/lib/libc.so.6"):
        # A layout with its libraries straight in /usr/lib (no multiarch dir): /usr/lib is code there.
        candidates.append("/usr/lib")
    candidates += [*_DATA_DIRS, *_ETC]
    if python:
        candidates += python_parts(python)
    candidates += extra_ro
    for top in TOP_LINKS:
        if os.path.isdir(top) and not os.path.islink(top):
            candidates.append(top)  # a system without merged /usr: /bin and /lib are code too
    existing = [p for p in dict.fromkeys(candidates) if os.path.lexists(p)]
    return [p for p in existing if not any(p.startswith(o + os.sep) for o in existing if o != p)]
