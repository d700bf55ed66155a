"""What a model server may cost one request: a floor under busy waits and a cap on the reply's size.

A server is outside the run, and a hostile or broken one was seen to: answer `429` with `Retry-After: 0`
forever (2807 requests in 150 s: the client waited 0 s between them), send a 64 MB reply (a 3.9 GB peak
once parsed), and trickle a reply that never ends (httpx's timeout is per read, so a byte every few
seconds resets it and the run hung). The engines here therefore wait at least a floor that doubles per
busy answer, read replies as a stream up to a cap, and put one total deadline on a request
(`SGLangEngine(deadline_s=...)`).
"""

from __future__ import annotations

import httpx

from turngym.engines.engine import EngineError

#: The largest reply body a request reads (16 MiB). A chat completion or an SGLang `/generate` answer with
#: logprobs for a 100k-token turn is a few MB; anything past this is refused rather than parsed.
MAX_REPLY_BYTES = 16 * 2**20

#: Sent with every request, so the size read is the size parsed (see `read_capped`).
IDENTITY = {"accept-encoding": "identity"}

#: The shortest wait after a busy answer (s), doubled per busy answer in a row, and where doubling stops.
BUSY_FLOOR_S = 0.5
BUSY_CEILING_S = 30.0


def busy_wait(retry_after: float, busy_answers: int, floor: float = BUSY_FLOOR_S) -> float:
    """Seconds to wait after the `busy_answers`-th busy answer in a row (0-based) that asked `retry_after`.

    The server's own `Retry-After` is honoured when it asks for more; a smaller one (0 included) is
    raised to `floor * 2**busy_answers`, capped at `BUSY_CEILING_S`.

    >>> [busy_wait(0, n) for n in range(3)], busy_wait(5, 0), busy_wait(0, 20)
    ([0.5, 1.0, 2.0], 5.0, 30.0)
    """
    return max(float(retry_after), min(floor * 2.0**busy_answers, BUSY_CEILING_S))


async def read_capped(response: httpx.Response, limit: int, where: str) -> bytes:
    """The body of a streamed `response`, refused with one line once it passes `limit` bytes.

    A `Content-Length` past the limit is refused before anything is read; a body without one is read
    chunk by chunk and refused as soon as it grows past the limit, so memory never holds more than
    `limit` plus one chunk.

    Raises:
        EngineError: the reply is larger than `limit` bytes, or compressed (requests ask for identity).
    """
    encoding = response.headers.get("content-encoding", "identity").strip().lower()
    if encoding not in ("", "identity"):
        # The request asked for identity: a compressed body could expand a thousandfold in one chunk.
        raise EngineError(f"{where} sent a {encoding}-encoded reply though identity was asked; refused")
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise EngineError(_too_large(where, limit, f"it declared {int(declared)} bytes"))
    parts: list[bytes] = []
    size = 0
    async for chunk in response.aiter_raw():
        size += len(chunk)
        if size > limit:
            raise EngineError(_too_large(where, limit, f"{size} bytes read so far"))
        parts.append(chunk)
    return b"".join(parts)


def _too_large(where: str, limit: int, seen: str) -> str:
    return f"{where} sent a reply larger than {limit} bytes ({seen}); refused (max_reply_bytes)"
