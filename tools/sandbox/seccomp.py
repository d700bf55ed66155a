"""The sandbox's seccomp filter: syscalls sandboxed code never needs, refused with EPERM.

Built with libseccomp (through the `pyseccomp` ctypes binding) and exported once as a BPF program that
bubblewrap installs with `--seccomp FD` right before it execs the sandboxed command. Only the native
architecture is allowed: libseccomp's default bad-architecture action kills a process that tries the
32-bit (int 0x80) or x32 entry points to get around the list.
"""

from __future__ import annotations

import errno
import os
import threading

# Kernel attack surface and sandbox escapes: namespaces and mounts (nested user namespaces are also
# closed by bwrap --disable-userns), io_uring (its ops bypass per-syscall filtering), tracing and
# cross-process memory access, kernel keyrings, BPF, perf, modules, kexec, swap, clocks, reboot.
DENIED = (
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "move_mount",
    "open_tree",
    "mount_setattr",
    "open_by_handle_at",
    "name_to_handle_at",
    "unshare",
    "setns",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "keyctl",
    "add_key",
    "request_key",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "swapon",
    "swapoff",
    "reboot",
    "acct",
    "quotactl",
    "syslog",
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "adjtimex",
    "lookup_dcookie",
    "vhangup",
    "personality",
)
# clone() stays (fork and threads need it) but not with a namespace flag.
_CLONE_NAMESPACE_FLAGS = (
    0x00020000,  # CLONE_NEWNS
    0x02000000,  # CLONE_NEWCGROUP
    0x04000000,  # CLONE_NEWUTS
    0x08000000,  # CLONE_NEWIPC
    0x10000000,  # CLONE_NEWUSER
    0x20000000,  # CLONE_NEWPID
    0x40000000,  # CLONE_NEWNET
)

_program: list[bytes | str] = []
_lock = threading.Lock()


def program() -> bytes:
    """The BPF program (built on first use, then cached); raises RuntimeError when libseccomp is missing."""
    with _lock:
        if not _program:
            try:
                _program.append(_build())
            except Exception as exc:  # missing binding or library: one clear sentence for the caller
                _program.append(f"{type(exc).__name__}: {exc}")
        value = _program[0]
    if isinstance(value, str):
        raise RuntimeError(
            f"seccomp filter unavailable ({value}); install libseccomp2 and the `pyseccomp` package"
        )
    return value


def unavailable_reason() -> str:
    """Empty when the filter can be built here, else why not."""
    try:
        program()
    except RuntimeError as exc:
        return str(exc)
    return ""


def _build() -> bytes:
    import pyseccomp as sc  # lazy: ctypes + libseccomp load only when a sandbox is made

    filt = sc.SyscallFilter(sc.ALLOW)
    for name in DENIED:
        try:
            filt.add_rule(sc.ERRNO(errno.EPERM), name)
        except (RuntimeError, ValueError, OSError):
            continue  # a syscall this libseccomp or architecture does not know cannot be called either
    # clone3 passes its flags in memory a filter cannot read: refuse it as "not implemented" so libc
    # falls back to clone(), whose flags are checked below.
    filt.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    for flag in _CLONE_NAMESPACE_FLAGS:
        filt.add_rule(sc.ERRNO(errno.EPERM), "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    read_fd, write_fd = os.pipe()
    try:
        with os.fdopen(write_fd, "wb") as out:
            filt.export_bpf(out)
        chunks = []
        while chunk := os.read(read_fd, 1 << 16):
            chunks.append(chunk)
    finally:
        os.close(read_fd)
    data = b"".join(chunks)
    if not data or len(data) % 8:
        raise RuntimeError(f"libseccomp exported a malformed program ({len(data)} bytes)")
    return data


def program_fd() -> int:
    """A fresh readable fd holding the program (bwrap reads it to EOF, so each run needs its own)."""
    data = program()
    read_fd, write_fd = os.pipe()
    try:
        # The program is a few hundred bytes, far below a pipe's buffer: this write cannot block.
        os.write(write_fd, data)
    finally:
        os.close(write_fd)
    return read_fd
