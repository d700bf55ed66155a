"""turngym engines: what samples tokens, and the models it samples from.

The engines implement `chat.Engine` (`await engine.generate(request_id, prompt_ids=..., sampling_params=...)`):
`HFEngine` (an in-process transformers model), `SGLangEngine` (SGLang's `/generate`, or
`python -m engines.serve`), `OpenAIEngine` (a chat API; evaluates, cannot train). Beside them: the
model server (`serve.py`), named models and GGUF files (`named_models.py`), the embedded tiny model
(`embedded_model/`) and checkpoints exported for an engine (`checkpoint_export.py`).

`rollout` re-exports the engines, so `from rollout import HFEngine` keeps working. Heavy modules
(torch, transformers) load on first attribute access, not at `import engines`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "Engine": "engines.engine",
    "EngineError": "engines.engine",
    "EngineRequestError": "engines.engine",
    "Generation": "engines.engine",
    "SamplingParams": "engines.engine",
    "HFEngine": "engines.hf_engine",
    "OpenAIEngine": "engines.openai_engine",
    "SGLangEngine": "engines.sglang_engine",
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
    from engines.engine import Engine, EngineError, EngineRequestError, Generation, SamplingParams
    from engines.hf_engine import HFEngine
    from engines.openai_engine import OpenAIEngine
    from engines.sglang_engine import SGLangEngine


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'engines' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
