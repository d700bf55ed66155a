"""The engine contract: `await engine.generate(request_id, prompt_ids=..., sampling_params=...)`.

Defined here, not in rollout, because its lowest user is `LLMUser` (an interaction plays a user with an
engine) and interactions sit below rollout: `rollout.engine` re-exports this one protocol with the
engines' shared types, so there is one contract, not one per layer.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class Engine(Protocol):
    """Anything that turns prompt ids into generated ids with logprobs.

    `generate` returns something with `token_ids`, `log_probs` and `stop_reason` (verl's `TokenOutput`
    or `rollout.engine.Generation`).
    """

    async def generate(
        self, request_id: str, *, prompt_ids: list[int], sampling_params: dict[str, Any]
    ) -> Any:
        """Generate a continuation of `prompt_ids`."""
        ...
