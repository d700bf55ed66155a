"""Failed episodes: where the exception was raised, the first traceback kept once per run, the counts and
the stop record trainer.run turns into exit code 1 (the end-to-end run is in tests/test_newcomer.py)."""

from __future__ import annotations

import threading

from rollout.episode_result import EpisodeResult
from rollout.failure_trace import FAILURE_FILE_ENV, describe_exception, record_first_failure
from trainer.hooks.episode_failures import (
    EPISODES_METRIC,
    FAILED_METRIC,
    AllEpisodesFailed,
    failed_segment,
    failure_counts,
    failure_path,
    first_error,
    forget_failures,
    stop_exit,
    traceback_lines,
    write_stop,
)


def _raise_key_error():
    return {}["missing"]


def _caught():
    try:
        _raise_key_error()
    except KeyError as exc:
        return exc


def test_the_error_names_the_file_and_line_that_raised():
    text = describe_exception(_caught())
    assert text.startswith("KeyError: 'missing' (at ")
    assert f"{__file__}:" in text and text.endswith(" in _raise_key_error)")


def test_only_the_first_failure_of_a_run_keeps_its_traceback(tmp_path, monkeypatch, capsys):
    assert record_first_failure(_caught(), "x-v0", 1) is False  # outside training: nothing kept
    monkeypatch.setenv(FAILURE_FILE_ENV, str(failure_path(tmp_path)))
    results = []
    threads = [
        threading.Thread(target=lambda i=i: results.append(record_first_failure(_caught(), "x-v0", i)))
        for i in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [False] * 7 + [True]
    lines = traceback_lines(tmp_path)
    assert lines[0].startswith("first failed episode: x-v0 seed ")
    assert lines[-1] == "KeyError: 'missing'" and any("_raise_key_error" in line for line in lines)
    assert capsys.readouterr().out.count("Traceback (most recent call last)") == 1
    forget_failures(tmp_path)
    assert traceback_lines(tmp_path) == []


def test_counts_and_the_stop_record(tmp_path):
    failed = EpisodeResult(failed=True, error="KeyError: 'x' (at env.py:3 in step)")
    fields = [failed.to_extra_fields(), None, {}]
    counts = failure_counts(fields)
    assert (counts[FAILED_METRIC], counts[EPISODES_METRIC]) == (1.0, 3.0)
    assert failed_segment(counts[FAILED_METRIC], counts[EPISODES_METRIC]) == "failed 1/3"
    assert first_error(fields) == "KeyError: 'x' (at env.py:3 in step)"
    assert stop_exit(tmp_path) == (0, None)
    write_stop(tmp_path, AllEpisodesFailed("step 1/2", 8, "KeyError: 'x' (at env.py:3 in step)"))
    code, line = stop_exit(tmp_path)
    assert code == 1 and line.startswith("every episode failed (step 1/2: 8 of 8); the first: KeyError")
