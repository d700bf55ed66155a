"""The engine contract: `await engine.generate(request_id, prompt_ids=..., sampling_params=...)`.

Any object with that coroutine qualifies (verl's server manager does). It returns something with
`token_ids`, `log_probs` and `stop_reason` (verl's `TokenOutput` or `Generation` below). `Engine`, the
protocol, is defined in `turngym/chat/engine.py` (the ground floor: LLMUser, below rollout, needs it too) and
re-exported here with the types the engines share.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# The contract itself sits in chat, the ground floor; the engines here implement it.
from turngym.chat.engine import Engine as Engine
from turngym.chat.engine import chat_kwargs as chat_kwargs
from turngym.common.number_bounds import Bound


@dataclass
class Generation:
    """One completion: generated ids (stop token included), their logprobs, and why it stopped.

    `stop_reason` is "completed" (a stop token or string ended it), "length" (token budget) or
    "aborted", as in verl's `TokenOutput`.
    """

    token_ids: list[int]
    log_probs: list[float] | None = None
    stop_reason: str | None = None
    extra_fields: dict[str, Any] = field(default_factory=dict)


class EngineError(RuntimeError):
    """An engine could not produce a completion (server error, bad request, closed engine)."""


class EngineRequestError(EngineError):
    """The request itself was rejected (e.g. HTTP 400): retrying the same request cannot help."""


_TOKENS = Bound(whole=True, low=0, high=2**31 - 1, nullable=True)
_SEED = Bound(whole=True, low=0, high=2**63 - 1, nullable=True)  # what torch.Generator.manual_seed takes
_PENALTY = Bound(whole=False, low=-2, high=2)  # OpenAI's range for frequency and presence penalties

#: What each numeric sampling parameter of a request may be (verl's and SGLang's names). A temperature
#: between 0 and 0.01 divides the logits into inf (1e-300 was an HTTP 500), and a seed past 2**63 - 1
#: does not fit torch's generator (2**200 was a 500 too).
SAMPLING_BOUNDS: dict[str, Bound] = {
    "temperature": Bound(whole=False, low=0.01, high=100, zero=True),  # 0: greedy
    "top_p": Bound(whole=False, low=0, high=1, open_low=True),
    "top_k": Bound(whole=True, low=-1, high=2**31 - 1, nullable=True),  # -1 (or 0): no cut
    "min_p": Bound(whole=False, low=0, high=1),
    "max_new_tokens": _TOKENS,
    "max_tokens": _TOKENS,
    "min_new_tokens": _TOKENS,
    "sampling_seed": _SEED,
    "seed": _SEED,
    "repetition_penalty": Bound(whole=False, low=0, high=100, open_low=True),
    "frequency_penalty": _PENALTY,
    "presence_penalty": _PENALTY,
}


def sampling_problem(params: Mapping[str, Any]) -> str | None:
    """None when every numeric sampling parameter in `params` is inside `SAMPLING_BOUNDS`, else why not.

    Args:
        params: a request's sampling parameters (keys without a bound are not looked at).

    Returns:
        None, or one line naming the parameter, its value and what to give.

    Example:
        >>> sampling_problem({"temperature": 0.7, "sampling_seed": 3}) is None
        True
        >>> sampling_problem({"temperature": 1e-300})
        'temperature=1e-300 is out of range; give a number in [0.01, 100] (or 0)'
    """
    for key, value in params.items():
        bound = SAMPLING_BOUNDS.get(key)
        if bound is not None:
            problem = bound.problem(key, value)
            if problem is not None:
                return problem
    return None


@dataclass(frozen=True)
class SamplingParams:
    """Normalised sampling parameters shared by the engines.

    Accepts verl's names (`max_tokens`, `logprobs`, `repetition_penalty`) and SGLang's
    (`max_new_tokens`, `sampling_seed`, `stop_token_ids`). `temperature == 0` means greedy.
    """

    max_new_tokens: int = 128
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = -1
    stop_token_ids: tuple[int, ...] = ()
    stop: tuple[str, ...] = ()
    seed: int | None = None
    ignore_eos: bool = False

    @classmethod
    def from_dict(cls, params: dict[str, Any] | None, default_max_new_tokens: int = 128) -> SamplingParams:
        """Read a verl- or SGLang-style dict; unknown keys are ignored here (servers validate)."""
        p = dict(params or {})
        max_new = p.get("max_new_tokens", p.get("max_tokens"))
        stop = p.get("stop") or ()
        if isinstance(stop, str):
            stop = (stop,)
        top_k = p.get("top_k")
        seed = p.get("sampling_seed", p.get("seed"))
        return cls(
            max_new_tokens=int(default_max_new_tokens if max_new is None else max_new),
            temperature=float(1.0 if p.get("temperature") is None else p["temperature"]),
            top_p=float(1.0 if p.get("top_p") is None else p["top_p"]),
            top_k=-1 if top_k is None or int(top_k) <= 0 else int(top_k),
            stop_token_ids=tuple(int(t) for t in (p.get("stop_token_ids") or ())),
            stop=tuple(str(s) for s in stop),
            seed=None if seed is None else int(seed),
            ignore_eos=bool(p.get("ignore_eos", False)),
        )
