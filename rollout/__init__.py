"""turngym rollout: token-exact multi-turn episodes (trajectories), the verl agent loop, standalone DataProto export.

The engines live in `engines` and are exported here too (`from rollout import HFEngine`). Heavy modules
(torch, transformers, verl) load on first attribute access, not at `import rollout`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from common.moved_modules import keep_old_paths

# Modules that moved out of rollout (issue 35). Their old paths still import the moved module, with one
# DeprecationWarning (common/moved_modules.py); docs/design.md lists them.
keep_old_paths(
    {
        "rollout.engine": "engines.engine",
        "rollout.hf_engine": "engines.hf_engine",
        "rollout.openai_engine": "engines.openai_engine",
        "rollout.sglang_engine": "engines.sglang_engine",
        "rollout.checkpoint_export": "engines.checkpoint_export",
        "rollout.chat_format": "chat.format",
    }
)

_EXPORTS = {
    "Engine": "engines.engine",
    "EngineError": "engines.engine",
    "Generation": "engines.engine",
    "SamplingParams": "engines.engine",
    "HFEngine": "engines.hf_engine",
    "SGLangEngine": "engines.sglang_engine",
    "ScriptedEngine": "rollout.scripted_engine",
    "EngineOpponent": "rollout.engine_opponent",
    "ChatFormat": "chat.format",
    "Trajectory": "rollout.trajectory",
    "TrajectoryBatch": "rollout.trajectory",
    "EpisodeConfig": "rollout.episode",
    "run_episode": "rollout.episode",
    "collect": "rollout.collection",
    "acollect": "rollout.collection",
    "to_dataproto": "rollout.dataproto",
    "TurnGymAgentLoop": "rollout.agent_loop",
    "summarize": "rollout.collection",
}

__all__ = [
    "ChatFormat",
    "Engine",
    "EngineError",
    "EngineOpponent",
    "EpisodeConfig",
    "Generation",
    "HFEngine",
    "SGLangEngine",
    "SamplingParams",
    "ScriptedEngine",
    "Trajectory",
    "TrajectoryBatch",
    "TurnGymAgentLoop",
    "acollect",
    "collect",
    "run_episode",
    "summarize",
    "to_dataproto",
]

if TYPE_CHECKING:
    from chat.format import ChatFormat
    from engines.engine import Engine, EngineError, Generation, SamplingParams
    from engines.hf_engine import HFEngine
    from engines.sglang_engine import SGLangEngine
    from rollout.agent_loop import TurnGymAgentLoop
    from rollout.collection import acollect, collect, summarize
    from rollout.dataproto import to_dataproto
    from rollout.engine_opponent import EngineOpponent
    from rollout.episode import EpisodeConfig, run_episode
    from rollout.scripted_engine import ScriptedEngine
    from rollout.trajectory import Trajectory, TrajectoryBatch


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'rollout' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
