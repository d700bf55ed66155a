"""SGLangEngine: a client of SGLang's native `POST /generate` (input ids in, ids + logprobs out).

Works against `sglang serve` in its own process and environment, or `python -m turngym.engines.serve`.
Transport failures (connection refused/reset, timeouts) are retried with backoff, and so is a busy
server's 429/503 with `Retry-After` (the request was refused before it ran), waiting at least a floor
that doubles per busy answer; other HTTP error statuses are not, since the same request would fail the
same way. A request has one total deadline, retries and waits included, and its reply is read up to a
size cap (`turngym/engines/bounded_reply.py`).
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import httpx

from turngym.engines.bounded_reply import IDENTITY, MAX_REPLY_BYTES, busy_wait, read_capped
from turngym.engines.engine import EngineError, EngineRequestError, Generation

# SGLang validates sampling_params strictly (unknown keys are HTTP 400): send only what it knows.
SGLANG_SAMPLING_KEYS = frozenset(
    {
        "max_new_tokens",
        "temperature",
        "top_p",
        "top_k",
        "min_p",
        "stop",
        "stop_token_ids",
        "skip_special_tokens",
        "spaces_between_special_tokens",
        "no_stop_trim",
        "ignore_eos",
        "sampling_seed",
        "n",
        "repetition_penalty",
        "frequency_penalty",
        "presence_penalty",
        "min_new_tokens",
    }
)
_RENAMES = {"max_tokens": "max_new_tokens", "seed": "sampling_seed"}
_FINISH = {"stop": "completed", "length": "length", "abort": "aborted"}


def to_sglang_sampling(params: dict[str, Any] | None) -> dict[str, Any]:
    """verl/OpenAI-style sampling params renamed and filtered to SGLang's native names."""
    out: dict[str, Any] = {}
    for key, value in (params or {}).items():
        key = _RENAMES.get(key, key)
        if key in SGLANG_SAMPLING_KEYS and value is not None:
            out[key] = value
    if "top_k" in out and int(out["top_k"]) <= 0:
        out["top_k"] = -1
    # Generated ids are kept exactly as produced, special tokens included.
    out.setdefault("skip_special_tokens", False)
    return out


def parse_generate_response(body: dict[str, Any]) -> Generation:
    """An SGLang `/generate` response body as a Generation."""
    meta = body.get("meta_info") or {}
    ids = body.get("output_ids")
    lp_entries = meta.get("output_token_logprobs")
    if ids is None and lp_entries is not None:
        ids = [int(e[1]) for e in lp_entries]
    if ids is None:
        raise EngineError(f"SGLang response has no output_ids: keys {sorted(body)}")
    log_probs = [float(e[0]) for e in lp_entries] if lp_entries is not None else None
    if log_probs is not None and len(log_probs) != len(ids):
        raise EngineError(f"SGLang returned {len(ids)} ids but {len(log_probs)} logprobs")
    finish = meta.get("finish_reason") or {}
    kind = finish.get("type") if isinstance(finish, dict) else finish
    extra = {k: meta[k] for k in ("prompt_tokens", "completion_tokens", "cached_tokens") if k in meta}
    return Generation(
        token_ids=[int(t) for t in ids],
        log_probs=log_probs,
        stop_reason=_FINISH.get(kind, kind),
        extra_fields=extra,
    )


class SGLangEngine:
    """Engine over HTTP: `await SGLangEngine(url).generate(rid, prompt_ids=..., sampling_params=...)`.

    Args:
        url: The server, `http://host:port`.
        timeout: Seconds one read may wait (httpx's timeout, per read).
        connect_timeout: Seconds a connection may take.
        retries: Transport failures retried per request.
        backoff: First wait after a transport failure (s), doubled per failure.
        max_connections: Pooled connections.
        api_key: Sent as `Authorization: Bearer`; default `$TURNGYM_MODEL_TOKEN`.
        busy_wait_s: Seconds in all a request may wait out busy answers (429/503 + Retry-After).
        busy_floor_s: The shortest wait after a busy answer, doubled per busy answer in a row: a
            `Retry-After: 0` does not make the client ask again at once.
        deadline_s: Seconds in all one request may take, retries, waits and a slow reply included
            (default `timeout + busy_wait_s`); past it the request fails with one line.
        max_reply_bytes: The largest reply read; a larger one is refused.
    """

    def __init__(
        self,
        url: str = "http://127.0.0.1:30000",
        *,
        timeout: float = 600.0,
        connect_timeout: float = 10.0,
        retries: int = 3,
        backoff: float = 0.5,
        max_connections: int = 256,
        api_key: str | None = None,
        busy_wait_s: float = 120.0,
        busy_floor_s: float = 0.5,
        deadline_s: float | None = None,
        max_reply_bytes: int = MAX_REPLY_BYTES,
    ):
        self.url = url.rstrip("/")
        # SGLang's `--api-key` and `turngym.engines.serve --token` both read `Authorization: Bearer <key>`.
        api_key = api_key if api_key is not None else os.environ.get("TURNGYM_MODEL_TOKEN") or None
        self._headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        self._headers.update(IDENTITY)
        self.retries = retries
        self.backoff = backoff
        self._timeout = httpx.Timeout(timeout, connect=connect_timeout)
        self._limits = httpx.Limits(
            max_connections=max_connections, max_keepalive_connections=max_connections
        )
        self._clients: dict[int, httpx.AsyncClient] = {}
        self.transport_retries = 0
        self.busy_wait_s = busy_wait_s  # seconds in all a request may wait out 429/503 + Retry-After
        self.busy_floor_s = busy_floor_s
        self.busy_retries = 0
        self.deadline_s = float(deadline_s) if deadline_s is not None else timeout + busy_wait_s
        self.max_reply_bytes = int(max_reply_bytes)

    def _client(self) -> httpx.AsyncClient:
        # httpx clients are bound to the loop that created their pool: one per running loop.
        key = id(asyncio.get_running_loop())
        client = self._clients.get(key)
        if client is None or client.is_closed:
            client = self._clients[key] = httpx.AsyncClient(
                base_url=self.url, timeout=self._timeout, limits=self._limits, headers=self._headers
            )
        return client

    async def generate(
        self, request_id: str, *, prompt_ids: list[int], sampling_params: dict[str, Any] | None = None
    ) -> Generation:
        """POST /generate with input_ids and return_logprob; retry transport errors only."""
        payload = {
            "input_ids": [int(t) for t in prompt_ids],
            "sampling_params": to_sglang_sampling(sampling_params),
            "return_logprob": True,
            "logprob_start_len": -1,
            "rid": str(request_id),
        }
        body = await self._post("/generate", payload)
        return parse_generate_response(body)

    async def ready(self) -> bool:
        """True when the server answers GET /ready (or /health) with 200."""
        for path in ("/ready", "/health"):
            if await self._answers_ok(path):
                return True
        return False

    async def served_model(self) -> str | None:
        """The name of the model the server serves, when turngym knows it (``embedded``, a named model).

        Asks ``GET /get_model_info``: turngym's server answers ``turngym_model``; for SGLang's own the
        ``model_path`` is looked up on this machine (`turngym.engines.named_models.served_model_name`).

        Returns:
            The name, or None for any other model.

        Raises:
            EngineError: the server gave no JSON answer within the deadline.
        """
        from turngym.engines.named_models import served_model_name

        return served_model_name(await self._get_json("/get_model_info"), "model_path")

    async def _get_json(self, path: str) -> dict[str, Any]:
        """GET `path` once under the request deadline, its reply read up to the cap: a JSON object."""
        where = f"{self.url}{path}"
        try:
            async with asyncio.timeout(self.deadline_s):
                async with self._client().stream("GET", path) as r:
                    body = await read_capped(r, self.max_reply_bytes, where)
        except TimeoutError:
            raise EngineError(f"{where} gave no answer within {self.deadline_s:g} s") from None
        except httpx.TransportError as exc:
            raise EngineError(f"{where} is unreachable: {type(exc).__name__}: {exc}") from None
        if r.status_code >= 400:
            raise EngineError(
                f"{where} answered HTTP {r.status_code}: {body[:200].decode('utf-8', 'replace')}"
            )
        try:
            answer = json.loads(body)
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            raise EngineError(f"{where} answered no JSON object: {body[:200].decode('utf-8', 'replace')!r}")
        return answer

    async def _answers_ok(self, path: str) -> bool:
        # Only the status is wanted: the body is never read, and the deadline bounds trickled headers.
        try:
            async with asyncio.timeout(self.deadline_s):
                async with self._client().stream("GET", path) as r:
                    return r.status_code == 200
        except (httpx.TransportError, TimeoutError):
            return False

    async def _post(self, path: str, payload: dict[str, Any]) -> dict[str, Any]:
        # httpx's timeout is per read: a reply trickled a byte at a time never trips it, so the whole
        # request (retries and busy waits included) runs under one deadline.
        try:
            async with asyncio.timeout(self.deadline_s):
                return await self._post_with_retries(path, payload)
        except TimeoutError:
            raise EngineError(
                f"{self.url}{path} gave no complete answer within {self.deadline_s:g} s; "
                "the request was given up (deadline_s)"
            ) from None

    async def _post_with_retries(self, path: str, payload: dict[str, Any]) -> dict[str, Any]:
        last: Exception | None = None
        attempt, waited, busy = 0, 0.0, 0
        where = f"{self.url}{path}"
        while attempt <= self.retries:
            try:
                async with self._client().stream("POST", path, json=payload) as r:
                    wait = _retry_after(r)
                    body = await read_capped(r, self.max_reply_bytes, where)
            except httpx.TransportError as exc:
                last = exc
                if attempt < self.retries:
                    self.transport_retries += 1
                    await asyncio.sleep(self.backoff * 2**attempt)
                attempt += 1
                continue
            if wait is not None:
                wait = busy_wait(wait, busy, self.busy_floor_s)
                if waited + wait <= self.busy_wait_s:
                    self.busy_retries += 1
                    busy += 1
                    waited += wait
                    await asyncio.sleep(wait)
                    continue
            text = body.decode("utf-8", "replace")
            if r.status_code >= 400:
                cls = EngineRequestError if 400 <= r.status_code < 500 else EngineError
                raise cls(f"{where} answered HTTP {r.status_code}: {text[:500]}")
            try:
                return json.loads(body)
            except ValueError as exc:
                raise EngineError(f"{where} returned non-JSON: {text[:200]!r}") from exc
        raise EngineError(f"{where} unreachable after {self.retries + 1} attempts: {last!r}") from last

    async def aclose(self) -> None:
        """Close pooled connections."""
        clients, self._clients = list(self._clients.values()), {}
        for c in clients:
            await c.aclose()

    close = aclose


def _retry_after(response: httpx.Response) -> float | None:
    """Seconds a busy server (429/503 with a numeric Retry-After) asks to wait before trying again."""
    if response.status_code not in (429, 503):
        return None
    try:
        return max(0.0, float(response.headers.get("retry-after", "")))
    except ValueError:
        return None
