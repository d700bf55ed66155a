"""ScriptedEngine: an engine that writes planned assistant turns as canonical tokens.

For tests and benchmarks: a script says what the assistant says on each turn (a message dict, rendered
through the chat template exactly as the template would write it, or raw text), and the engine
returns those ids (end-of-turn token included) with made-up non-zero logprobs. Because the ids are the
template's own, a whole-conversation render must reproduce the assembled trajectory token for token.
"""

from __future__ import annotations

import asyncio
import random
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from turngym.chat.format import ChatFormat
from turngym.engines.engine import EngineError, Generation, SamplingParams

Script = Callable[[int, random.Random], "dict | str"]


class ScriptedEngine:
    """Answers `generate` with the script's turn for that request id (turn = calls seen so far)."""

    def __init__(
        self,
        tokenizer: Any,
        script: Script,
        *,
        tools: list[dict] | None = None,
        chat_template_kwargs: dict[str, Any] | None = None,
        seed: int = 0,
        fail_first: int = 0,
        latency: float = 0.0,
    ):
        self.format = ChatFormat(tokenizer, tools, chat_template_kwargs)
        self.script = script
        self.seed = seed
        self.fail_first = fail_first
        self.latency = latency
        self.calls = 0
        self._turns: dict[str, int] = defaultdict(int)

    def ids_for(self, turn: dict | str) -> list[int]:
        """Canonical ids for a planned turn (message dict or raw text), end-of-turn token included."""
        if isinstance(turn, str):
            return self.format.encode(turn) + [self.format.end_of_turn_id]
        return self.format.assistant_ids(turn)

    async def generate(self, request_id: str, *, prompt_ids: list[int], sampling_params: dict | None = None):
        """The scripted turn, cut to max_tokens like a real engine."""
        self.calls += 1
        if self.calls <= self.fail_first:
            raise EngineError(f"scripted failure {self.calls}/{self.fail_first}")
        if self.latency:
            await asyncio.sleep(self.latency)
        turn = self._turns[request_id]
        self._turns[request_id] += 1
        rng = random.Random(f"{self.seed}:{request_id}:{turn}")
        ids = self.ids_for(self.script(turn, rng))
        params = SamplingParams.from_dict(sampling_params, default_max_new_tokens=len(ids))
        reason = "completed"
        if len(ids) > params.max_new_tokens:
            ids, reason = ids[: params.max_new_tokens], "length"
        log_probs = [-0.001 * (1 + (i % 97)) for i in range(len(ids))]
        return Generation(token_ids=ids, log_probs=log_probs, stop_reason=reason)
