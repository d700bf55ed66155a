"""turngym engines: what samples tokens, and the models it samples from.

The engines implement `turngym.chat.Engine` (`await engine.generate(request_id, prompt_ids=..., sampling_params=...)`):
`HFEngine` (an in-process transformers model), `SGLangEngine` (SGLang's `/generate`, or
`python -m turngym.engines.serve`), `OpenAIEngine` (a chat API; evaluates, cannot train). Beside them: the
model server (`serve.py`), named models and GGUF files (`named_models.py`), the embedded tiny model
(`embedded_model/`) and checkpoints exported for an engine (`checkpoint_export.py`).

`rollout` re-exports the engines, so `from rollout import HFEngine` keeps working. Heavy modules
(torch, transformers) load on first attribute access, not at `import turngym.engines`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "Engine": "turngym.engines.engine",
    "EngineError": "turngym.engines.engine",
    "EngineRequestError": "turngym.engines.engine",
    "Generation": "turngym.engines.engine",
    "SamplingParams": "turngym.engines.engine",
    "HFEngine": "turngym.engines.hf_engine",
    "OpenAIEngine": "turngym.engines.openai_engine",
    "SGLangEngine": "turngym.engines.sglang_engine",
}

__all__ = [
    "Engine",
    "EngineError",
    "EngineRequestError",
    "Generation",
    "HFEngine",
    "OpenAIEngine",
    "SGLangEngine",
    "SamplingParams",
]

if TYPE_CHECKING:
    from turngym.engines.engine import Engine, EngineError, EngineRequestError, Generation, SamplingParams
    from turngym.engines.hf_engine import HFEngine
    from turngym.engines.openai_engine import OpenAIEngine
    from turngym.engines.sglang_engine import SGLangEngine


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'turngym.engines' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
