"""call_with_deadline's exception lands inside its call or nowhere: never in the code after it."""

from __future__ import annotations

import contextlib
import random
import threading
import time

from turngym.common.thread_deadline import DeadlineExceeded, _active, call_with_deadline


def _spin(seconds: float) -> str:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass
    return "done"


def _hammer(seed: int, errors: list) -> None:
    rng = random.Random(seed)
    try:
        for _ in range(300):
            # Deadlines as long as the work, give or take: the exception races the call's end.
            with contextlib.suppress(DeadlineExceeded):
                call_with_deadline(rng.uniform(0.0005, 0.003), _spin, rng.uniform(0, 0.003))
            total = 0
            for i in range(2000):  # after the call: a stray exception would land here
                total += i
    except BaseException as exc:  # noqa: BLE001 - what the test looks for
        errors.append(repr(exc))


def test_no_exception_escapes_its_call_across_threads():
    errors: list = []
    threads = [threading.Thread(target=_hammer, args=(seed, errors)) for seed in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a thread is stuck"
    assert errors == [] and not _active


def test_a_call_that_ends_in_time_returns_and_one_that_does_not_is_stopped():
    assert call_with_deadline(5.0, _spin, 0.01) == "done"
    try:
        call_with_deadline(0.1, _spin, 60)
    except DeadlineExceeded as exc:
        assert exc.seconds == 0.1
    else:
        raise AssertionError("not stopped")


def test_arguments_named_like_its_own_parameters_pass_through():
    assert call_with_deadline(1.0, lambda seconds, fn: (seconds, fn), seconds=1, fn=2) == (1, 2)
