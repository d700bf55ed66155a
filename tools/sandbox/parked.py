"""`ParkedLauncher`: the C launcher started ahead of a run, already inside the run's cgroups, waiting for
its command.

Moving a task into a cgroup (v1, or v2 without CLONE_INTO_CGROUP) waits for an RCU grace period: several
milliseconds, more on a loaded machine, and most of a short run's overhead. A parked launcher pays that
before the run is asked for; the run itself then only sends the command line. Joining still happens
before anything is exec'd, so the run's limits hold from its first instruction as before.
"""

from __future__ import annotations

import contextlib
import os
import subprocess

from tools.sandbox.limits import Limits
from tools.sandbox.spawn import SECCOMP_FD_SLOT, launcher_limit_fields


class ParkedLauncher:
    """One launcher process in a run's cgroups, blocked until `launch` sends it a command (or `discard`)."""

    def __init__(self, launcher: str, cgroup_procs: tuple[str, ...], env: dict[str, str]) -> None:
        from tools.sandbox.seccomp import program_fd

        if any(":" in p for p in cgroup_procs):
            raise ValueError(f"cgroup paths must not contain ':': {cgroup_procs}")
        orders_r, self._orders = os.pipe()
        seccomp = program_fd()
        try:
            self.proc = subprocess.Popen(
                [launcher, "--parked", str(orders_r), str(seccomp), ":".join(cgroup_procs) or "-"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd="/",
                env=env,
                start_new_session=True,
                pass_fds=(orders_r, seccomp),
            )
        except BaseException:
            os.close(self._orders)
            raise
        finally:
            os.close(orders_r)
            os.close(seccomp)
        self._seccomp = seccomp  # its number in the launcher (pass_fds keeps numbers)
        self.used = False

    def launch(self, argv: list[str], *, cwd: str, limits: Limits, uid: int | None) -> subprocess.Popen:
        """Send the command: the launcher lowers rlimits, drops to `uid`, chdirs to `cwd` and execs it."""
        keep = SECCOMP_FD_SLOT in argv
        argv = [str(self._seccomp) if a == SECCOMP_FD_SLOT else a for a in argv]
        fields = [
            "1" if keep else "0",
            cwd,
            *launcher_limit_fields(limits, uid),
            "-",
            "--",
            *argv,
        ]
        if any("\0" in f for f in fields):
            raise ValueError("command arguments must not contain NUL bytes")
        self.used = True
        payload = b"".join(f.encode() + b"\0" for f in fields)
        data = b"%010d" % len(payload) + payload
        try:
            view = memoryview(data)
            while view:  # the launcher is reading, so a long command cannot block this for good
                view = view[os.write(self._orders, view) :]
        except BrokenPipeError:
            # Died before its orders (joining failed, or killed from outside): not the code's failure.
            self.proc.wait()
            why = self.proc.stderr.read().decode(errors="replace").strip() or f"exit {self.proc.returncode}"
            self.forget()
            raise RuntimeError(f"the parked launcher exited before its command: {why}") from None
        finally:
            if self._orders >= 0:
                os.close(self._orders)
                self._orders = -1
        return self.proc

    def discard(self) -> None:
        """End the unused launcher (it has exec'd nothing yet) and reap it."""
        self.forget()
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()
        self.proc.wait()

    def forget(self) -> None:
        """Close this process's copies of the launcher's pipes without sending orders (in a forked child:
        a copy of the stdin pipe left open would keep a run that has no input from reading EOF)."""
        if self._orders >= 0:
            with contextlib.suppress(OSError):
                os.close(self._orders)
            self._orders = -1
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
