"""The paths issue 35 moved to the ground floor and envs.server still import, warn, and give the same objects."""

import importlib
import sys
import warnings

import pytest

MOVED = [
    ("tools.registration", "common.registration"),
    ("tools.run_sync", "common.run_sync"),
    ("tools.cli_errors", "common.cli_errors"),
    ("tools.serving", "serving"),
    ("envs.remote.server", "envs.server.app"),
    ("tools.calls", "chat.calls"),
    ("tools.chat_encoding", "chat.encoder"),
    ("rollout.chat_format", "chat.format"),
]


def _import_warning(old: str):
    sys.modules.pop(old, None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = importlib.import_module(old)
    return module, [w for w in caught if issubclass(w.category, DeprecationWarning)]


@pytest.mark.parametrize(("old", "new"), MOVED)
def test_an_old_path_still_works_and_warns(old: str, new: str):
    shim, warned = _import_warning(old)
    assert any(new in str(w.message) for w in warned)
    moved = importlib.import_module(new)
    assert shim.__all__
    for name in shim.__all__:
        assert getattr(shim, name) is getattr(moved, name), name


def test_the_names_tools_exported_still_resolve_without_a_warning():
    import chat.calls
    import common.registration
    import tools

    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        assert tools.Registry is common.registration.Registry
        assert tools.load_entry_point is common.registration.load_entry_point
        assert tools.parse_tool_calls is chat.calls.parse_tool_calls


def test_the_serve_options_moved_with_the_server():
    import envs.remote
    import envs.server

    with pytest.warns(DeprecationWarning, match="envs.server.add_serve_arguments"):
        assert envs.remote.add_serve_arguments is envs.server.add_serve_arguments
