"""Sandbox housekeeping: jobs past the queue bound run in the caller, and flush still waits for the rest."""

from __future__ import annotations

import threading

from tools.sandbox import deferred


def test_a_full_queue_runs_jobs_in_the_caller_and_flush_still_works():
    release, ran = threading.Event(), []
    deferred.defer(lambda: release.wait(30))  # holds the housekeeping thread
    caller = threading.get_ident()
    for index in range(deferred.MAX_PENDING + 5):
        deferred.defer(lambda index=index: ran.append((index, threading.get_ident())))
    inline = [index for index, thread in ran if thread == caller]
    assert inline == list(range(deferred.MAX_PENDING - 1, deferred.MAX_PENDING + 5))
    release.set()
    deferred.flush(timeout_s=30)
    assert sorted(index for index, _ in ran) == list(range(deferred.MAX_PENDING + 5))
    deferred.flush(timeout_s=5)  # nothing stale is left behind to wait on
