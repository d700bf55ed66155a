"""trainer.cpu.post_import: a hook runs right after its module's body, and the finder leaves sys.meta_path
once no hook is pending (every later import would consult it otherwise)."""

from __future__ import annotations

import sys

import pytest

from trainer.cpu import post_import


@pytest.fixture
def modules(tmp_path, monkeypatch):
    """Two fresh importable modules, `pi_watched_a` and `pi_watched_b`, forgotten after the test.

    The hooks other tests' imports left pending (the CPU plugin watches verl modules) are set aside
    and sys.meta_path is put back as it was, so only this test's hooks count.
    """
    for name in ("pi_watched_a", "pi_watched_b"):
        (tmp_path / f"{name}.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(post_import, "_pending", {})
    meta_path = list(sys.meta_path)
    post_import._uninstall()
    yield
    for name in ("pi_watched_a", "pi_watched_b"):
        sys.modules.pop(name, None)
    sys.meta_path[:] = meta_path


def test_the_hook_runs_and_the_finder_leaves_after_the_import(modules):
    seen = []
    post_import.when_imported("pi_watched_a", lambda module: seen.append(module.VALUE))
    assert post_import._finder in sys.meta_path
    import pi_watched_a  # noqa: F401

    assert seen == [1]
    assert post_import._finder not in sys.meta_path
    assert not post_import._pending


def test_the_finder_stays_while_another_hook_is_pending(modules):
    seen = []
    post_import.when_imported("pi_watched_a", lambda module: seen.append("a"))
    post_import.when_imported("pi_watched_b", lambda module: seen.append("b"))
    import pi_watched_a  # noqa: F401

    assert seen == ["a"] and post_import._finder in sys.meta_path
    import pi_watched_b  # noqa: F401

    assert seen == ["a", "b"] and post_import._finder not in sys.meta_path


def test_a_hook_may_watch_another_module(modules):
    seen = []

    def chain(module):
        seen.append("a")
        post_import.when_imported("pi_watched_b", lambda module: seen.append("b"))

    post_import.when_imported("pi_watched_a", chain)
    import pi_watched_a  # noqa: F401

    assert post_import._finder in sys.meta_path
    import pi_watched_b  # noqa: F401

    assert seen == ["a", "b"] and post_import._finder not in sys.meta_path


def test_an_imported_module_runs_the_hook_now_without_the_finder(modules):
    import pi_watched_a

    seen = []
    post_import.when_imported("pi_watched_a", seen.append)
    assert seen == [pi_watched_a] and post_import._finder not in sys.meta_path
