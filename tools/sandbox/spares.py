"""Spare runs made ahead of need: a fresh run cgroup with a `ParkedLauncher` already inside it.

A run that finds a spare skips the cgroup's creation and the launcher's join (an RCU grace period) on
its critical path. Spares are made on the housekeeping thread (`deferred`), at most `MAX_SPARES` per
configuration and never more than the runs in flight, shared by every LocalSandbox of this process with
the same limits. A spare holds no uid and no work dir: those are still per run. At exit (and in
`discard_all`) the spares' launchers are let go and their groups removed.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
from dataclasses import dataclass

from tools.sandbox.cgroup import RunCgroup
from tools.sandbox.deferred import defer
from tools.sandbox.parked import ParkedLauncher

log = logging.getLogger(__name__)

MAX_SPARES = 8


@dataclass(frozen=True)
class SpareKind:
    """What a spare is made for: its group's limits and the launcher's environment."""

    memory_mb: int
    nproc: int
    cpus: float
    env: tuple[tuple[str, str], ...]


@dataclass
class Spare:
    """A run cgroup and the launcher parked in it."""

    group: RunCgroup
    launcher: ParkedLauncher

    def discard(self) -> None:
        """Let the launcher go and remove the group."""
        self.launcher.discard()
        self.group.remove()


_ready: dict[SpareKind, list[Spare]] = {}
_making: dict[SpareKind, int] = {}
_lock = threading.Lock()
# Held while a spare's pipes exist outside `_ready`, and across os.fork(): a forked child then finds every
# spare in `_ready` and closes its copies of their pipes.
_creating = threading.Lock()


def take(kind: SpareKind) -> Spare | None:
    """A ready spare of this kind, or None (the run then makes its own group and launcher)."""
    while True:
        with _lock:
            spares = _ready.get(kind)
            spare = spares.pop() if spares else None
        if spare is None or spare.launcher.proc.poll() is None:
            return spare
        # Its launcher is gone (killed from outside, or joining failed): never hand that to a run.
        defer(spare.discard)


def replenish(kind: SpareKind, launcher: str, in_flight: int) -> None:
    """Have `in_flight` + 1 spares of this kind (at most MAX_SPARES) made on the housekeeping thread.

    One more than the runs in flight: back-to-back calls then take a spare made a whole run earlier,
    whose launcher has finished joining, not the one still waiting for its grace period."""
    with _lock:
        have = len(_ready.get(kind, ())) + _making.get(kind, 0)
        missing = min(in_flight + 1, MAX_SPARES) - have
        if missing <= 0:
            return
        _making[kind] = _making.get(kind, 0) + missing
    for _ in range(missing):
        defer(lambda: _make(kind, launcher))


def _make(kind: SpareKind, launcher: str) -> None:
    spare = None
    group = None
    try:
        group = RunCgroup(kind.memory_mb, kind.nproc, kind.cpus, tag="spare")
        with _creating:
            spare = Spare(group, ParkedLauncher(launcher, group.procs_files, dict(kind.env)))
            with _lock:
                _ready.setdefault(kind, []).append(spare)
    except BaseException:
        if group is not None:
            group.remove()
        raise
    finally:
        with _lock:
            _making[kind] -= 1


def spare_groups() -> list[RunCgroup]:
    """The groups of the spares ready now (no run has used them yet)."""
    with _lock:
        return [s.group for group in _ready.values() for s in group]


def discard_all() -> None:
    """Let every ready spare go (their launchers exit, their groups are removed)."""
    with _lock:
        spares = [s for group in _ready.values() for s in group]
        _ready.clear()
    for spare in spares:
        try:
            spare.discard()
        except Exception:  # cleanup at exit: report, go on with the others
            log.exception("discarding a spare sandbox run failed")


def _forget_after_fork() -> None:
    # The parent owns these spares; a forked child must neither use nor remove them.
    global _lock, _creating
    for spare in (s for group in _ready.values() for s in group):
        spare.launcher.forget()
    _ready.clear()
    _making.clear()
    _lock, _creating = threading.Lock(), threading.Lock()


os.register_at_fork(
    before=lambda: _creating.acquire(),
    after_in_parent=lambda: _creating.release(),
    after_in_child=_forget_after_fork,
)
atexit.register(discard_all)
