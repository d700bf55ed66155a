"""`FusionSandbox`: the LocalSandbox interface against a SandboxFusion `/run_code` server."""

from __future__ import annotations

import asyncio
import base64
import os
import threading
import time
import weakref
from typing import Any

from tools.sandbox.result import SandboxResult

_LANG = {"python3": "python", "py": "python", "c++": "cpp", "cxx": "cpp", "sh": "bash", "shell": "bash"}


class FusionSandbox:
    """Client for SandboxFusion (or `python -m tools.sandbox.serve`).

    The request is built with the `sandbox-fusion` client's model and posted as raw JSON so that
    `memory_limit_MB` (which that model drops) reaches the server; that package's `run_code` is not
    used because it retries every exception, so a run that timed out on the client would run again.

    Only what cannot have run is retried: a connection that could not be made (`max_attempts` tries
    with backoff), and a busy server's 429/503 with `Retry-After` (waiting up to `busy_wait_s` in
    all). A read timeout, a dropped connection after the request went out, or any error answer is
    returned as a `sandbox_error`, never retried: the run may have happened.

    `token` (default: the TURNGYM_SANDBOX_TOKEN variable) is sent as `Authorization: Bearer <token>`,
    which `python -m tools.sandbox.serve --token` requires.
    """

    def __init__(
        self,
        endpoint: str | None = None,
        *,
        timeout_s: float = 10.0,
        memory_mb: int = 512,
        compile_timeout_s: float = 10.0,
        max_attempts: int = 4,
        client_timeout_s: float | None = None,
        busy_wait_s: float = 120.0,
        token: str | None = None,
    ) -> None:
        self.endpoint = (
            endpoint or os.environ.get("SANDBOX_FUSION_ENDPOINT") or "http://localhost:8080"
        ).rstrip("/")
        self.timeout_s = timeout_s
        self.memory_mb = memory_mb
        self.compile_timeout_s = compile_timeout_s
        self.max_attempts = max_attempts
        self.client_timeout_s = client_timeout_s
        self.busy_wait_s = busy_wait_s
        token = token if token is not None else os.environ.get("TURNGYM_SANDBOX_TOKEN") or None
        self._headers = {"authorization": f"Bearer {token}"} if token else {}
        # Clients are reused (one per event loop): building one costs tens of ms (TLS context), more
        # than a sandbox run. Sync `run` goes through one background loop, so it reuses its client too.
        self._aclients: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def _async_client(self):
        import httpx

        loop = asyncio.get_running_loop()
        client = self._aclients.get(loop)
        if client is None:
            client = self._aclients[loop] = httpx.AsyncClient(timeout=None)
        return client

    def close(self) -> None:
        """Close the HTTP client that sync `run` calls share."""
        loop = _SYNC_LOOP[0]
        client = self._aclients.pop(loop, None) if loop is not None else None
        if client is not None:
            asyncio.run_coroutine_threadsafe(client.aclose(), loop).result()

    def _body(
        self, code, language, timeout_s, memory_mb, stdin, files, fetch_files, compile_timeout_s
    ) -> dict[str, Any]:
        from sandbox_fusion.models import RunCodeRequest

        request = RunCodeRequest(
            code=code,
            language=_LANG.get(language.lower(), language.lower()),
            run_timeout=timeout_s if timeout_s is not None else self.timeout_s,
            compile_timeout=compile_timeout_s if compile_timeout_s is not None else self.compile_timeout_s,
            stdin=stdin,
            files={
                k: base64.b64encode(v.encode() if isinstance(v, str) else v).decode()
                for k, v in (files or {}).items()
            },
            fetch_files=list(fetch_files or []),
        )
        body = request.model_dump() if hasattr(request, "model_dump") else request.dict()
        body["memory_limit_MB"] = int(memory_mb if memory_mb is not None else self.memory_mb)
        return body

    def _http_timeout(self, body: dict[str, Any]) -> float:
        return self.client_timeout_s or body["run_timeout"] + body["compile_timeout"] + 30.0

    def _post(
        self, code, language, timeout_s, memory_mb, stdin, files, fetch_files, compile_timeout_s=None
    ) -> dict[str, Any] | SandboxResult:
        """The request for one run, or the result for a request that cannot be built."""
        try:
            body = self._body(
                code, language, timeout_s, memory_mb, stdin, files, fetch_files, compile_timeout_s
            )
        except Exception as exc:
            return SandboxResult("sandbox_error", message=f"bad request: {exc}")
        return {
            "url": f"{self.endpoint}/run_code",
            "json": body,
            "timeout": self._http_timeout(body),
            "headers": self._headers,
        }

    def _unreachable(self, last: Exception | None) -> SandboxResult:
        return SandboxResult(
            "sandbox_error", message=f"cannot reach {self.endpoint}: {type(last).__name__}: {last}"
        )

    def _next(
        self, outcome, attempt: int, busy_waited: float, start: float
    ) -> tuple[float, SandboxResult | None]:
        """(seconds to wait before trying again, or the final result) for one attempt's outcome."""
        import httpx

        if isinstance(outcome, Exception):
            # Only a connection never made is certain not to have run anything.
            if isinstance(outcome, (httpx.ConnectError, httpx.ConnectTimeout)):
                if attempt + 1 < self.max_attempts:
                    return _backoff(attempt), None
                return 0.0, self._unreachable(outcome)
            why = "no answer in time" if isinstance(outcome, httpx.TimeoutException) else "connection lost"
            return 0.0, SandboxResult(
                "sandbox_error",
                duration_s=time.perf_counter() - start,
                message=f"{why} from {self.endpoint} ({type(outcome).__name__}); not retried: "
                "the run may have happened",
            )
        retry_after = _retry_after(outcome)
        if retry_after is not None and busy_waited + retry_after <= self.busy_wait_s:
            return retry_after, None
        return 0.0, _result(outcome, start)

    def run(
        self,
        code: str,
        language: str = "python",
        *,
        timeout_s: float | None = None,
        memory_mb: int | None = None,
        stdin: str | None = None,
        files: dict[str, str | bytes] | None = None,
        fetch_files: list[str] | None = None,
        compile_timeout_s: float | None = None,
    ) -> SandboxResult:
        """Run `code` on the server; never raises. Blocking `arun`, awaited on a background event loop."""
        run = self.arun(
            code,
            language,
            timeout_s=timeout_s,
            memory_mb=memory_mb,
            stdin=stdin,
            files=files,
            fetch_files=fetch_files,
            compile_timeout_s=compile_timeout_s,
        )
        return asyncio.run_coroutine_threadsafe(run, _sync_loop()).result()

    async def arun(
        self,
        code: str,
        language: str = "python",
        *,
        timeout_s: float | None = None,
        memory_mb: int | None = None,
        stdin: str | None = None,
        files: dict[str, str | bytes] | None = None,
        fetch_files: list[str] | None = None,
        compile_timeout_s: float | None = None,
    ) -> SandboxResult:
        """Run `code` on the server without blocking the event loop; never raises."""
        import httpx

        post = self._post(code, language, timeout_s, memory_mb, stdin, files, fetch_files, compile_timeout_s)
        if isinstance(post, SandboxResult):
            return post
        start = time.perf_counter()
        client = self._async_client()
        attempt, busy_waited = 0, 0.0
        while True:
            try:
                outcome = await client.post(**post)
            except httpx.TransportError as exc:
                outcome = exc
            wait, result = self._next(outcome, attempt, busy_waited, start)
            if result is not None:
                return result
            if isinstance(outcome, Exception):
                attempt += 1
            else:
                busy_waited += wait
            await asyncio.sleep(wait)


# One event loop in a daemon thread serves every sync `run` (its HTTP clients stay open between runs).
_SYNC_LOOP: list[asyncio.AbstractEventLoop | None] = [None]
_SYNC_LOOP_LOCK = threading.Lock()


def _sync_loop() -> asyncio.AbstractEventLoop:
    with _SYNC_LOOP_LOCK:
        loop = _SYNC_LOOP[0]
        if loop is None:
            loop = _SYNC_LOOP[0] = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="fusion-sandbox-sync", daemon=True).start()
        return loop


def _backoff(attempt: int) -> float:
    return min(0.2 * 2**attempt, 2.0)


def _retry_after(response) -> float | None:
    """Seconds a busy server (429/503 with Retry-After) asks us to wait, with jitter; else None."""
    if response.status_code not in (429, 503):
        return None
    try:
        seconds = float(response.headers.get("retry-after", ""))
    except ValueError:
        return None  # absent or an HTTP date: not a promise we can act on safely
    import random

    # Jitter so clients refused together do not all come back in the same instant.
    return max(0.0, seconds) * (1.0 + 0.5 * random.random())


def _result(response, start: float) -> SandboxResult:
    return from_fusion(response.status_code, response.text, time.perf_counter() - start)


def from_fusion(http_status: int, text: str, duration_s: float) -> SandboxResult:
    """Map a SandboxFusion `/run_code` response to a SandboxResult."""
    import json

    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return SandboxResult(
            "sandbox_error", message=f"server answered HTTP {http_status} with non-JSON: {text[:200]}"
        )
    if http_status != 200 or not isinstance(data, dict) or "status" not in data:
        detail = (data.get("message") or data.get("detail")) if isinstance(data, dict) else data
        return SandboxResult("sandbox_error", message=f"server answered HTTP {http_status}: {detail}")
    files = {k: base64.b64decode(v) for k, v in (data.get("files") or {}).items() if v is not None}
    if data["status"] == "SandboxError":
        return SandboxResult("sandbox_error", message=data.get("message") or "sandbox error", files=files)
    comp, run = data.get("compile_result"), data.get("run_result")
    compile_output = ""
    if comp:
        compile_output = (comp.get("stdout") or "") + (comp.get("stderr") or "")
        if comp.get("status") != "Finished" or comp.get("return_code") not in (0, None):
            why = "compile timed out" if comp.get("status") == "TimeLimitExceeded" else "compilation failed"
            return SandboxResult(
                "compile_error",
                exit_code=comp.get("return_code"),
                duration_s=duration_s,
                message=why,
                compile_output=compile_output,
                files=files,
            )
    run = run or {}
    result = SandboxResult(
        "ok",
        stdout=run.get("stdout") or "",
        stderr=run.get("stderr") or "",
        exit_code=run.get("return_code"),
        duration_s=duration_s,
        compile_output=compile_output,
        files=files,
    )
    if run.get("status") == "TimeLimitExceeded":
        result.status, result.message = "timeout", data.get("message") or "time limit exceeded"
    elif run.get("status") == "Error" or result.exit_code not in (0, None) or data["status"] == "Failed":
        result.status = "error"
        result.message = data.get("message") or f"exited with code {result.exit_code}"
    return result
