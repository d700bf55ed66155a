"""run_sync: a coroutine from sync code, in or out of a running loop; waiting for worker threads or not."""

import asyncio
import threading
import time

import pytest

from turngym.common.run_sync import run_sync


def _leaves_a_thread_behind(done: threading.Event):
    async def coro():
        # Started on the loop's default executor and not awaited: as a tool call a deadline cut off.
        asyncio.get_running_loop().run_in_executor(None, lambda: (time.sleep(1.5), done.set()))
        return "returned"

    return coro()


@pytest.mark.parametrize("inside_a_loop", [False, True])
def test_waiting_for_threads_is_the_default_and_can_be_turned_off(inside_a_loop):
    def call(wait: bool) -> tuple[str, bool]:
        done = threading.Event()
        if inside_a_loop:

            async def outer():
                return run_sync(_leaves_a_thread_behind(done), wait_for_threads=wait)

            value = asyncio.run(outer())
        else:
            value = run_sync(_leaves_a_thread_behind(done), wait_for_threads=wait)
        finished_first = done.is_set()
        assert done.wait(10)
        return value, finished_first

    assert call(True) == ("returned", True)  # asyncio.run's way: the executor's threads are joined
    assert call(False) == ("returned", False)  # returned while the thread still slept


def test_errors_are_raised_in_the_callers_thread_either_way():
    async def fails():
        raise KeyError("inner")

    for wait in (True, False):
        with pytest.raises(KeyError, match="inner"):
            run_sync(fails(), wait_for_threads=wait)
