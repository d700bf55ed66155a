"""A run's private work dir: created (optionally on a size-capped tmpfs) for its uid, filled, read, removed."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile

from tools.sandbox.cgroup import pid_alive

PREFIX = "turngym-sbx-"
_RANDOM_LEN = 8  # what tempfile.mkdtemp appends


def make_workdir(uid: int | None, base: str | None = None, size_mb: int | None = None) -> str:
    """A private temp dir owned by `uid`; with `size_mb` (root only) a tmpfs of that size, so what the
    code writes there is bounded in total, not only per file. Its name carries this process's pid
    (`turngym-sbx-p<pid>_XXXXXXXX`), so `sweep_stale_workdirs` can tell when its owner is gone."""
    path = tempfile.mkdtemp(prefix=f"{PREFIX}p{os.getpid()}_", dir=base)
    if size_mb is not None:
        try:
            mount_tmpfs(path, size_mb, uid)
        except OSError:
            os.rmdir(path)
            raise
    if uid is not None:
        os.chown(path, uid, uid)
    os.chmod(path, 0o700)
    return path


_MS_NOSUID, _MS_NODEV, _MNT_DETACH = 2, 4, 2
_libc = []


def _libc_fn(name: str):
    if not _libc:
        import ctypes

        _libc.append(ctypes.CDLL(None, use_errno=True))
    return getattr(_libc[0], name)


def mount_tmpfs(path: str, size_mb: int, uid: int | None) -> None:
    """Mount a size- and inode-capped tmpfs on `path` (needs root)."""
    import ctypes

    owner = f",uid={uid},gid={uid}" if uid is not None else ""
    options = f"size={int(size_mb)}m,nr_inodes=16384,mode=0700{owner}".encode()
    if _libc_fn("mount")(b"tmpfs", path.encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV, options) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mounting a tmpfs on {path}: {os.strerror(err)}")


def remove_workdir(path: str) -> None:
    """Delete the work dir (unmounting its tmpfs first), including read-only dirs the code may have made."""
    if os.path.ismount(path) and _libc_fn("umount2")(path.encode(), _MNT_DETACH) == 0:
        os.rmdir(path)
        return

    def fix(func, p, _exc):
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(p), 0o700)
            os.chmod(p, 0o700)
            func(p)

    shutil.rmtree(path, onerror=fix)


def write_files(workdir: str, files: dict[str, str | bytes], uid: int | None) -> None:
    """Put input files under the work dir; paths must stay inside it."""
    root = os.path.realpath(workdir)
    for rel, data in files.items():
        target = os.path.realpath(os.path.join(root, rel.lstrip("/")))
        if os.path.commonpath([root, target]) != root:
            raise ValueError(f"file path {rel!r} leaves the sandbox directory")
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as fh:
            fh.write(data.encode() if isinstance(data, str) else data)
        if uid is not None:
            os.chown(target, uid, uid)
            d = os.path.dirname(target)
            while d != root and d.startswith(root):
                os.chown(d, uid, uid)
                d = os.path.dirname(d)


def read_files(workdir: str, paths: list[str], limit_bytes: int) -> dict[str, bytes]:
    """Fetch files the code wrote (missing ones are skipped; symlinks out of the dir refused)."""
    root = os.path.realpath(workdir)
    out: dict[str, bytes] = {}
    for rel in paths:
        target = os.path.realpath(os.path.join(root, rel.lstrip("/").removeprefix("sandbox/")))
        if os.path.commonpath([root, target]) != root or not os.path.isfile(target):
            continue
        with open(target, "rb") as fh:
            out[rel] = fh.read(limit_bytes)
    return out


def sweep_stale_workdirs(base: str | None = None) -> int:
    """Unmount and delete work dirs whose creating process is gone (killed before its teardown ran);
    count them. Names without a pid (older versions) are left alone."""
    root = base or tempfile.gettempdir()
    try:
        names = os.listdir(root)
    except OSError:
        return 0
    removed = 0
    for name in names:
        pid_text, sep, rest = name.removeprefix(PREFIX + "p").partition("_")
        if not name.startswith(PREFIX + "p") or not sep or not pid_text.isdigit():
            continue
        if len(rest) != _RANDOM_LEN or pid_alive(int(pid_text)):
            continue
        with contextlib.suppress(OSError):
            remove_workdir(os.path.join(root, name))
            removed += 1
    return removed
