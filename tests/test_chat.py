"""The ground-floor chat package: one `Message` and the engine contract, shared by every package."""

import subprocess
import sys
from pathlib import Path

from turngym import chat
from turngym.chat.engine import Engine, chat_kwargs
from turngym.chat.message import Message

ROOT = Path(__file__).resolve().parent.parent


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
