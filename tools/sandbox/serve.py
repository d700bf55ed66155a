"""`python -m tools.sandbox.serve --port 8080`: a SandboxFusion-compatible `/run_code` server on LocalSandbox.

Built to hold under load and faults:
- at most `--concurrency` runs at once and `--queue` requests waiting; beyond that the answer is
  429 with `Retry-After` at once (a request counts as waiting from its first byte, so slow uploads
  cannot pile up unbounded memory either);
- a client that disconnects (while queued or running) cancels its run and its processes are killed;
- per-request settings (timeouts, memory) go to that run only, never onto the shared sandbox;
- memory, time and body size above the server's maxima are rejected (400 / 413), not clamped:
  a silently shortened timeout would turn into a wrong "timed out" verdict;
- every failure has one JSON shape that SandboxFusion clients parse
  (`{"status": "SandboxError", "message", "compile_result": null, "run_result": null, "files": {},
  "error": {"code", "message"}}`), and no message names a host path.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import binascii
import json
import math
import os
import re
import signal
import sys
import tempfile
import threading
import time
from typing import Any

import pydantic

from tools.cli_errors import ArgumentParser, UsageError, check_port_free, run_cli
from tools.serving.errors import RequestError
from tools.sandbox.local import LocalSandbox
from tools.sandbox.result import SandboxResult

_MB = 1024 * 1024


class RunCodeBody(pydantic.BaseModel):
    """SandboxFusion's RunCodeRequest, plus the `memory_limit_MB` its client drops."""

    code: str
    language: str = "python"
    compile_timeout: float = pydantic.Field(10, gt=0)
    run_timeout: float = pydantic.Field(10, gt=0)
    memory_limit_MB: int = -1  # <= 0: the server's default
    stdin: str | None = None
    files: dict[str, str | None] = {}
    fetch_files: list[str] = []


# --- never leak host paths -------------------------------------------------------------------------

# LocalSandbox work dirs are `<tmp or workdir_base>/turngym-sbx-XXXX`; inside bubblewrap the same dir is
# /sandbox, so rewriting to /sandbox makes the rlimits-only mode say what the bwrap mode says.
_WORKDIR = re.compile(r"(?:/[^\s'\"/:]+)*/turngym-sbx-[A-Za-z0-9_]+")
# Any other absolute path in one of our own messages (a lock dir, the launcher, the repo).
_ABS_PATH = re.compile(r"(?<![\w.>])/(?!sandbox\b)(?:[\w.+@-]+/)*[\w.+@-]+")


def _host_prefixes() -> list[str]:
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    found = {here, sys.prefix, sys.base_prefix, os.path.realpath(sys.executable), tempfile.gettempdir()}
    # Longest first so a venv inside the repo is replaced whole.
    return sorted((p for p in found if p and p != "/" and len(p) > 4), key=len, reverse=True)


_HOST_PREFIXES = _host_prefixes()


def scrub_output(text: str) -> str:
    """Program output (stderr, compiler output) with the host work dir shown as /sandbox."""
    if "turngym-sbx-" in text:
        text = _WORKDIR.sub("/sandbox", text)
    return text


def scrub_message(text: str) -> str:
    """One of our messages with every host path replaced (work dir -> /sandbox, others -> <host path>)."""
    text = scrub_output(text)
    for prefix in _HOST_PREFIXES:
        text = text.replace(prefix, "<host path>")
    return _ABS_PATH.sub("<host path>", text)


# --- the response shapes -----------------------------------------------------------------------------


def error_body(code: str, message: str) -> dict[str, Any]:
    """The one JSON shape of every failure (SandboxFusion's SandboxError plus an `error` object)."""
    message = scrub_message(message)
    return {
        "status": "SandboxError",
        "message": message,
        "compile_result": None,
        "run_result": None,
        "files": {},
        "error": {"code": code, "message": message},
    }


def to_fusion(result: SandboxResult, fetched: dict[str, bytes] | None = None) -> dict[str, Any]:
    """Render a SandboxResult as SandboxFusion's RunCodeResponse JSON."""
    files = {k: base64.b64encode(v).decode() for k, v in (fetched or result.files).items()}
    if result.status == "sandbox_error":
        return error_body("sandbox_error", result.message or "sandbox error")
    compile_output = scrub_output(result.compile_output)
    compile_result = None
    if result.compile_output or result.status == "compile_error":
        compile_result = {
            "status": "TimeLimitExceeded"
            if "timed out" in result.message and result.status == "compile_error"
            else "Finished",
            "execution_time": result.duration_s if result.status == "compile_error" else None,
            "return_code": result.exit_code if result.status == "compile_error" else 0,
            "stdout": "",
            "stderr": compile_output,
        }
    run_result = None
    if result.status != "compile_error":
        run_result = {
            "status": "TimeLimitExceeded" if result.status == "timeout" else "Finished",
            "execution_time": result.duration_s,
            "return_code": result.exit_code,
            "stdout": result.stdout,
            "stderr": scrub_output(result.stderr),
        }
    return {
        "status": "Success" if result.status == "ok" else "Failed",
        "message": scrub_message(result.message),
        "compile_result": compile_result,
        "run_result": run_result,
        "files": files,
    }


# --- request checks ----------------------------------------------------------------------------------


def check_path(name: str, what: str) -> None:
    """Refuse a file name that is empty, absolute, climbs with `..` or holds odd characters."""
    if not name or not name.strip():
        raise RequestError(400, "bad_file_name", f"{what}: empty file name")
    if name.startswith("/"):
        # The name is not echoed: it is a path, and error messages never carry one.
        raise RequestError(400, "bad_file_name", f"{what}: absolute paths are not allowed (use relative)")
    if "\x00" in name or "\\" in name or len(name) > 255:
        raise RequestError(400, "bad_file_name", f"{what} {name[:80]!r}: bad characters or too long")
    parts = name.split("/")
    if ".." in parts:
        raise RequestError(400, "bad_file_name", f"{what} {name!r}: '..' is not allowed")
    if any(p in ("", ".") for p in parts[:-1]) or parts[-1] in ("", "."):
        raise RequestError(400, "bad_file_name", f"{what} {name!r}: not a plain relative file path")


class Limits(pydantic.BaseModel):
    """The server's maxima; a request above one is refused, never clamped."""

    max_memory_mb: int = 4096
    max_timeout_s: float = 120.0
    max_body_mb: float = 16.0

    def check(self, body: RunCodeBody) -> None:
        """Raise RequestError when the request asks for more than the server allows."""
        for field in ("run_timeout", "compile_timeout"):
            value = getattr(body, field)
            if value > self.max_timeout_s:
                raise RequestError(
                    400,
                    "limit_exceeded",
                    f"{field}={value:g}s is above this server's maximum of {self.max_timeout_s:g}s",
                )
        if body.memory_limit_MB > self.max_memory_mb:
            raise RequestError(
                400,
                "limit_exceeded",
                f"memory_limit_MB={body.memory_limit_MB} is above this server's maximum of "
                f"{self.max_memory_mb} MB",
            )


def parse_body(raw: bytes, limits: Limits) -> tuple[RunCodeBody, dict[str, bytes]]:
    """Decode, validate and check one /run_code body; RequestError for anything wrong."""
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RequestError(400, "bad_request", f"body is not JSON: {exc}") from None
    try:
        body = RunCodeBody.model_validate(data)
    except pydantic.ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'body'}: {err['msg']}" for err in exc.errors()
        )
        raise RequestError(400, "bad_request", f"bad request: {problems}") from None
    limits.check(body)
    for name in body.files:
        check_path(name, "files")
    dirs = {name.rsplit("/", 1)[0] for name in body.files if "/" in name}
    for name in body.files:
        if name in dirs or any(d.startswith(name + "/") for d in dirs):
            raise RequestError(400, "bad_file_name", f"files {name!r}: both a file and a directory")
    for name in body.fetch_files:
        check_path(name, "fetch_files")
    try:
        files = {k: base64.b64decode(v, validate=True) for k, v in body.files.items() if v is not None}
    except (binascii.Error, ValueError) as exc:
        raise RequestError(400, "bad_request", f"bad request: files must be base64 ({exc})") from None
    return body, files


# --- the bounded queue -------------------------------------------------------------------------------


class Gate:
    """At most `concurrency` runs at once and `queue` admitted requests waiting; the rest are refused."""

    def __init__(self, concurrency: int, queue: int) -> None:
        self.concurrency, self.queue = concurrency, queue
        self.sem = asyncio.Semaphore(concurrency)
        self.admitted = 0  # running + waiting (from the request's first byte)
        self.running = 0
        self.mean_run_s = 1.0  # moving average, for Retry-After

    def admit(self) -> None:
        """Count a new request in, or raise a 429 with Retry-After when the queue is full."""
        if self.admitted >= self.concurrency + self.queue:
            waiting = self.admitted - self.running
            retry = min(60, max(1, math.ceil(self.mean_run_s * (waiting + 1) / self.concurrency)))
            raise RequestError(
                429,
                "queue_full",
                f"server busy: {self.running} running and {waiting} waiting (limits "
                f"{self.concurrency} and {self.queue}); retry after {retry}s",
                retry_after=retry,
            )
        self.admitted += 1

    def leave(self) -> None:
        """Count a request out."""
        self.admitted -= 1

    def ran(self, seconds: float) -> None:
        """Feed one run's duration into the Retry-After estimate."""
        self.mean_run_s = 0.8 * self.mean_run_s + 0.2 * seconds


async def read_body(request, max_bytes: int) -> bytes:
    """The request body, refused with 413 as soon as it passes `max_bytes` (header or stream)."""
    declared = request.headers.get("content-length")
    too_big = f"request body is over this server's maximum of {max_bytes / _MB:g} MB"
    if declared is not None:
        try:
            if int(declared) > max_bytes:
                raise RequestError(413, "body_too_large", too_big)
        except ValueError:
            raise RequestError(400, "bad_request", "bad Content-Length header") from None
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > max_bytes:
            raise RequestError(413, "body_too_large", too_big)
        chunks.append(chunk)
    return b"".join(chunks)


async def wait_disconnect(receive) -> None:
    """Return when the client goes away (uvicorn answers `receive` with http.disconnect)."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return


def create_app(
    sandbox: LocalSandbox | None = None,
    max_concurrency: int = 8,
    max_timeout_s: float = 120.0,
    *,
    max_queue: int | None = None,
    max_memory_mb: int = 4096,
    max_body_mb: float = 16.0,
):
    """The FastAPI app: POST /run_code, GET /health (with counters) and /v1/ping; JSON errors throughout."""
    from fastapi import FastAPI, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse
    from starlette.exceptions import HTTPException
    from starlette.requests import ClientDisconnect

    sandbox = sandbox or LocalSandbox()
    limits = Limits(max_memory_mb=max_memory_mb, max_timeout_s=max_timeout_s, max_body_mb=max_body_mb)
    queue = max_queue if max_queue is not None else 4 * max_concurrency
    gate: Gate | None = None  # made on first use: a Semaphore belongs to the serving loop
    stats = {"started": 0, "finished": 0, "rejected": 0, "cancelled": 0, "bad_requests": 0, "served": 0}

    def get_gate() -> Gate:
        nonlocal gate
        if gate is None:
            gate = Gate(max_concurrency, queue)
        return gate

    def error(exc: RequestError) -> JSONResponse:
        return JSONResponse(
            status_code=exc.status, content=error_body(exc.code, exc.message), headers=exc.headers
        )

    app = FastAPI(title="turngym sandbox", version="2")

    @app.exception_handler(RequestValidationError)
    async def bad_request(_request: Request, exc: RequestValidationError):
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        return error(RequestError(400, "bad_request", f"bad request: {problems}"))

    @app.exception_handler(HTTPException)
    async def http_error(_request: Request, exc: HTTPException):
        return error(RequestError.from_http(exc.status_code, str(exc.detail)))

    @app.exception_handler(Exception)
    async def internal_error(_request: Request, exc: Exception):
        return error(RequestError.internal(exc))

    @app.get("/health")
    async def health():
        g = get_gate()
        return {
            "status": "ok",
            "isolation": sandbox.isolation,
            "running": g.running,
            "waiting": g.admitted - g.running,
            "max_concurrency": max_concurrency,
            "max_queue": queue,
            "limits": limits.model_dump(),
            **stats,
        }

    @app.get("/v1/ping")
    async def ping():
        return "pong"

    async def run_code(request):
        g = get_gate()
        try:
            g.admit()
        except RequestError as exc:
            stats["rejected"] += 1
            return error(exc)
        try:
            try:
                raw = await read_body(request, int(limits.max_body_mb * _MB))
                body, files = parse_body(raw, limits)
            except RequestError as exc:
                stats["bad_requests"] += 1
                return error(exc)
            except ClientDisconnect:
                stats["cancelled"] += 1
                return error(RequestError(499, "client_disconnected", "client went away"))
            return await run_until_disconnect(request, g, body, files)
        finally:
            g.leave()

    # A plain Starlette route: the body is read by hand (size cap, JSON errors in our shape).
    app.router.add_route("/run_code", run_code, methods=["POST"])

    async def run_until_disconnect(request, g: Gate, body: RunCodeBody, files: dict[str, bytes]):
        cancel = threading.Event()
        started = False

        async def work() -> SandboxResult:
            nonlocal started
            async with g.sem:
                started = True
                g.running += 1
                stats["started"] += 1
                begin = time.perf_counter()
                try:
                    return await sandbox.arun(
                        body.code,
                        body.language,
                        timeout_s=body.run_timeout,
                        compile_timeout_s=body.compile_timeout,
                        memory_mb=body.memory_limit_MB if body.memory_limit_MB > 0 else None,
                        stdin=body.stdin,
                        files=files,
                        fetch_files=body.fetch_files,
                        cancel=cancel,
                    )
                finally:
                    # The worker thread has returned, so the run's processes are gone before the slot
                    # is handed on: concurrency never overshoots, even on cancellation.
                    g.running -= 1
                    g.ran(time.perf_counter() - begin)

        job = asyncio.ensure_future(work())
        gone = asyncio.ensure_future(wait_disconnect(request.receive))
        try:
            await asyncio.wait({job, gone}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not job.done():  # the client left (or the server is stopping): stop its run
                cancel.set()
                if not started:
                    job.cancel()  # still queued: leave the queue
                await asyncio.gather(job, return_exceptions=True)
                stats["cancelled"] += 1
            gone.cancel()
        if job.cancelled() or cancel.is_set():
            return error(RequestError(499, "client_disconnected", "client went away; run cancelled"))
        result = job.result()
        stats["finished"] += 1
        stats["served"] += 1
        return JSONResponse(to_fusion(result))

    return app


def spawn_server(
    *flags: str, port: int | None = None, env: dict[str, str] | None = None, ready_s: float = 60.0
):
    """Start `python -m tools.sandbox.serve` in a child process; (url, Popen) once /health answers."""
    from tools.loopback_server import spawn_server as spawn

    return spawn(["-m", "tools.sandbox.serve", *flags], port=port, env=env, ready_s=ready_s)


def host_memory_mb() -> int:
    """Physical memory of this host in MB."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // _MB


def memory_problem(args: argparse.Namespace, host_mb: int | None = None) -> str:
    """Fill in the default --max-memory-mb and say what is wrong with the memory settings ('' if nothing):
    `concurrency` runs at the maximum each must fit in the host's memory together."""
    host = host_mb if host_mb is not None else host_memory_mb()
    if args.concurrency < 1:
        return f"--concurrency must be at least 1, got {args.concurrency}"
    if args.max_memory_mb is None:
        args.max_memory_mb = min(4096, host // args.concurrency)
    if args.memory_mb < 1 or args.max_memory_mb < args.memory_mb:
        return (
            f"--memory-mb {args.memory_mb} must be at least 1 and at most --max-memory-mb "
            f"{args.max_memory_mb}; lower --memory-mb or raise --max-memory-mb"
        )
    if args.max_memory_mb * args.concurrency > host:
        return (
            f"--max-memory-mb {args.max_memory_mb} x --concurrency {args.concurrency} = "
            f"{args.max_memory_mb * args.concurrency} MB is more than this host's {host} MB of memory; "
            f"lower one (at most {host // args.concurrency} MB per run at this concurrency)"
        )
    return ""


def main(argv: list[str] | None = None) -> int:
    """Command line entry point; a mistake (bad limits, a port in use) is one line on stderr, exit code 2."""
    return run_cli("tools.sandbox.serve", _main, argv)


def _main(argv: list[str] | None) -> int:
    parser = ArgumentParser(
        prog="python -m tools.sandbox.serve",
        description="SandboxFusion-compatible /run_code server backed by LocalSandbox",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument(
        "--concurrency", "--max-concurrency", dest="concurrency", type=int, default=8, help="runs at once"
    )
    parser.add_argument(
        "--queue", type=int, default=None, help="requests waiting beyond those (default 4 x concurrency)"
    )
    parser.add_argument("--isolation", choices=["auto", "bwrap", "none"], default="auto")
    parser.add_argument(
        "--memory-mb", type=int, default=512, help="default when a request sets no memory_limit_MB"
    )
    parser.add_argument(
        "--max-memory-mb",
        type=int,
        default=None,
        help="larger memory_limit_MB -> 400 (default: 4096 or host memory / concurrency, the smaller); "
        "x concurrency must fit in the host's memory",
    )
    parser.add_argument(
        "--max-timeout-s", type=float, default=120.0, help="larger run/compile timeout -> 400"
    )
    parser.add_argument("--max-body-mb", type=float, default=16.0, help="larger request body -> 413")
    parser.add_argument("--log-level", default="warning")
    args = parser.parse_args(argv)
    problem = memory_problem(args)
    if problem:
        raise UsageError(problem)
    check_port_free(args.host, args.port)  # before the sandbox and its spares start
    import uvicorn

    sandbox = LocalSandbox(
        isolation=args.isolation, memory_mb=args.memory_mb, max_workers=max(args.concurrency, 4)
    )
    app = create_app(
        sandbox,
        args.concurrency,
        args.max_timeout_s,
        max_queue=args.queue,
        max_memory_mb=args.max_memory_mb,
        max_body_mb=args.max_body_mb,
    )
    # uvicorn re-raises SIGTERM once its graceful shutdown is done; as SystemExit the interpreter then
    # exits normally, so the sandbox housekeeping queued by the last runs (unmounting their work dirs,
    # removing their cgroups) and the spares' cleanup still happen instead of dying with the process.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    # On shutdown, runs still going after 5 s are cancelled (their processes killed) rather than awaited.
    uvicorn.run(
        app,
        host=args.host,
        port=args.port,
        log_level=args.log_level,
        access_log=False,
        timeout_graceful_shutdown=5,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
