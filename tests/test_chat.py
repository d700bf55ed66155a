"""The ground-floor chat package: one `Message`, the engine contract, and the moved paths' shims."""

import importlib
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from turngym import chat
from turngym.chat.engine import Engine, chat_kwargs
from turngym.chat.message import Message

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    ("old", "new", "names"),
    [
        ("envs.messages", "turngym.chat.message", ["Message", "system", "user", "assistant", "tool_result"]),
        ("interactions.engine", "turngym.chat.engine", ["Engine", "chat_kwargs"]),
    ],
)
def test_an_old_path_still_works_and_warns(old: str, new: str, names: list[str]):
    sys.modules.pop(old, None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        shim = importlib.import_module(old)
    assert any(issubclass(w.category, DeprecationWarning) and new in str(w.message) for w in caught)
    moved = importlib.import_module(new)
    for name in names:
        assert getattr(shim, name) is getattr(moved, name)


def test_one_message_and_one_engine_everywhere():
    from interactions.interaction import Message as InteractionMessage
    from turngym.engines.engine import Engine as EnginesEngine
    from turngym.engines.engine import chat_kwargs as engines_chat_kwargs

    assert InteractionMessage is Message is chat.Message
    assert EnginesEngine is Engine and engines_chat_kwargs is chat_kwargs


def test_import_chat_loads_no_other_turngym_package():
    code = "import sys, turngym.chat; print(' '.join(sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    loaded = set(out.stdout.split())
    assert not [m for m in ("envs", "tools", "interactions", "rollout", "trainer") if m in loaded]
