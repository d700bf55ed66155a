"""turngym rollout: token-exact multi-turn episodes (trajectories), the verl agent loop, standalone DataProto export.

The engines live in `turngym.engines` and are exported here too (`from rollout import HFEngine`). Heavy modules
(torch, transformers, verl) load on first attribute access, not at `import rollout`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "Engine": "turngym.engines.engine",
    "EngineError": "turngym.engines.engine",
    "Generation": "turngym.engines.engine",
    "SamplingParams": "turngym.engines.engine",
    "HFEngine": "turngym.engines.hf_engine",
    "SGLangEngine": "turngym.engines.sglang_engine",
    "ScriptedEngine": "rollout.scripted_engine",
    "EngineOpponent": "rollout.engine_opponent",
    "ChatFormat": "turngym.chat.format",
    "Trajectory": "rollout.trajectory",
    "TrajectoryBatch": "rollout.trajectory",
    "save_jsonl": "rollout.trajectory",
    "load_jsonl": "rollout.trajectory",
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
    "load_jsonl",
    "run_episode",
    "save_jsonl",
    "summarize",
    "to_dataproto",
]

if TYPE_CHECKING:
    from rollout.agent_loop import TurnGymAgentLoop
    from rollout.collection import acollect, collect, summarize
    from rollout.dataproto import to_dataproto
    from rollout.engine_opponent import EngineOpponent
    from rollout.episode import EpisodeConfig, run_episode
    from rollout.scripted_engine import ScriptedEngine
    from rollout.trajectory import Trajectory, TrajectoryBatch, load_jsonl, save_jsonl
    from turngym.chat.format import ChatFormat
    from turngym.engines.engine import Engine, EngineError, Generation, SamplingParams
    from turngym.engines.hf_engine import HFEngine
    from turngym.engines.sglang_engine import SGLangEngine


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'rollout' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
