"""`python -m tools.sandbox.serve --port 8080`: a SandboxFusion-compatible `/run_code` server on LocalSandbox.

Built to hold under load and faults:
- at most `--max-concurrency` runs at once and `--max-queue` requests waiting; beyond that the answer
  is 429 `overloaded` with `Retry-After` at once (a request counts as waiting from its first byte, so
  slow uploads cannot pile up unbounded memory either, and a body not received within `--body-timeout`
  gets 408 `body_timeout`);
- a client that disconnects (while queued or running) cancels its run and its processes are killed;
- per-request settings (timeouts, memory) go to that run only, never onto the shared sandbox;
- memory, time and body size above the server's maxima are rejected (400 / 413), not clamped:
  a silently shortened timeout would turn into a wrong "timed out" verdict;
- every failure has the `{"error": {"code", "message"}}` of every turngym server, inside the shape
  SandboxFusion clients parse (`{"status": "SandboxError", "message", "compile_result": null,
  "run_result": null, "files": {}, "error": {...}}`), and no message names a host path;
- beyond loopback the server does not start without `--token` (or TURNGYM_SANDBOX_TOKEN), which
  `FusionSandbox` sends from the same variable.

The gate, the body limits, the token check and the error shape are the shared serving layer's
(`turngym.serving`); this module holds the run request, its checks and the SandboxFusion answer.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import binascii
import functools
import os
import re
import signal
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from typing import Any

import pydantic

from tools.sandbox.local import LocalSandbox
from tools.sandbox.result import SandboxResult
from turngym.common.cli_errors import ArgumentParser, UsageError, run_cli
from turngym.serving import (
    AdmissionGate,
    RequestError,
    add_server_args,
    make_app,
    parse_json_object,
    read_body,
    run_server,
    server_settings,
)
from turngym.serving import error_body as shared_error_body

#: The environment variable that may hold the server's token (FusionSandbox sends it too).
TOKEN_ENV = "TURNGYM_SANDBOX_TOKEN"

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
    """The shared error shape inside SandboxFusion's SandboxError, its message without host paths.

    Args:
        code: the machine-readable code (`turngym.serving.errors`).
        message: one sentence; host paths in it are replaced.

    Returns:
        `{"status": "SandboxError", "message", "compile_result": None, "run_result": None, "files": {},
        "error": {"code", "message"}}`.

    Example:
        >>> error_body("overloaded", "server busy")["error"]
        {'code': 'overloaded', 'message': 'server busy'}
    """
    message = scrub_message(message)
    return {
        "status": "SandboxError",
        "message": message,
        "compile_result": None,
        "run_result": None,
        "files": {},
        **shared_error_body(code, message),
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
        for name in ("run_timeout", "compile_timeout"):
            value = getattr(body, name)
            if value > self.max_timeout_s:
                raise RequestError(
                    400,
                    "limit_exceeded",
                    f"{name}={value:g}s is above this server's maximum of {self.max_timeout_s:g}s",
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
    data = parse_json_object(raw)
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


async def wait_disconnect(receive) -> None:
    """Return when the client goes away (uvicorn answers `receive` with http.disconnect)."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return


@dataclass
class SandboxServer:
    """What the handlers share: the sandbox, its limits, the gate and the counters."""

    sandbox: LocalSandbox
    limits: Limits
    gate: AdmissionGate
    body_timeout_s: float
    stats: dict[str, int] = field(
        default_factory=lambda: {
            "started": 0,
            "finished": 0,
            "rejected": 0,
            "cancelled": 0,
            "bad_requests": 0,
            "served": 0,
        }
    )

    def counted(self, exc: RequestError) -> None:
        """Count a refusal in `/health`: for load, for a bad request, or a client gone."""
        if exc.status == 429:
            self.stats["rejected"] += 1
        elif exc.status == 499:
            self.stats["cancelled"] += 1
        else:
            self.stats["bad_requests"] += 1

    async def run(self, request: Any, body: RunCodeBody, files: dict[str, bytes]) -> dict[str, Any]:
        """Run one admitted request in a running slot; a client that leaves cancels it (499)."""
        cancel = threading.Event()
        started = False

        async def work() -> SandboxResult:
            nonlocal started
            # The slot is released only once the worker thread has returned, so the run's processes
            # are gone before it is handed on: concurrency never overshoots, even on cancellation.
            async with self.gate.slot():
                started = True
                self.stats["started"] += 1
                return await self.sandbox.arun(
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
            gone.cancel()
        if job.cancelled() or cancel.is_set():
            raise RequestError(499, "client_disconnected", "client went away; run cancelled")
        result = job.result()
        self.stats["finished"] += 1
        self.stats["served"] += 1
        return to_fusion(result)


# --- the handlers: one per route -----------------------------------------------------------------------


async def health(server: SandboxServer, _request: Any) -> dict[str, Any]:
    """GET /health: isolation, runs running and waiting, limits and counters."""
    return {
        "status": "ok",
        "isolation": server.sandbox.isolation,
        "running": server.gate.running,
        "waiting": server.gate.waiting,
        "max_concurrency": server.gate.concurrency,
        "max_queue": server.gate.queue,
        "limits": server.limits.model_dump(),
        **server.stats,
    }


async def ping(_server: SandboxServer, _request: Any) -> str:
    """GET /v1/ping: SandboxFusion's liveness check."""
    return "pong"


async def run_code(server: SandboxServer, request: Any) -> dict[str, Any]:
    """POST /run_code: admitted from the first byte (429 beyond the queue), checked, run, answered."""
    server.gate.admit()
    try:
        raw = await read_body(request, int(server.limits.max_body_mb * _MB), server.body_timeout_s)
        body, files = parse_body(raw, server.limits)
        return await server.run(request, body, files)
    finally:
        server.gate.leave()


ROUTES = [("GET", "/health", health), ("GET", "/v1/ping", ping), ("POST", "/run_code", run_code)]


def create_app(
    sandbox: LocalSandbox | None = None,
    max_concurrency: int = 8,
    max_timeout_s: float = 120.0,
    *,
    max_queue: int | None = None,
    max_memory_mb: int = 4096,
    max_body_mb: float = 16.0,
    body_timeout_s: float = 30.0,
    token: str | None = None,
):
    """The Starlette app: POST /run_code, GET /health (with counters) and /v1/ping; JSON errors throughout.

    Args:
        sandbox: the sandbox runs go to (default: a `LocalSandbox()`).
        max_concurrency: runs at once.
        max_timeout_s: larger run or compile timeouts are refused (400 `limit_exceeded`).
        max_queue: requests waiting beyond the running ones (429 beyond); default 4 x max_concurrency.
        max_memory_mb: larger `memory_limit_MB` is refused (400 `limit_exceeded`).
        max_body_mb: larger bodies get 413.
        body_timeout_s: a body not received whole within this gets 408.
        token: when set, every route but /health and /v1/ping needs `Authorization: Bearer <token>`.

    Returns:
        The app (run it with `turngym.serving.run_server` or uvicorn).
    """
    server = SandboxServer(
        sandbox=sandbox or LocalSandbox(),
        limits=Limits(max_memory_mb=max_memory_mb, max_timeout_s=max_timeout_s, max_body_mb=max_body_mb),
        gate=AdmissionGate(
            max_concurrency, max_queue if max_queue is not None else 4 * max_concurrency, what="runs"
        ),
        body_timeout_s=body_timeout_s,
    )
    return make_app(
        [(method, path, functools.partial(handler, server)) for method, path, handler in ROUTES],
        token=token,
        open_paths=("/health", "/v1/ping"),
        error_body=lambda exc: error_body(exc.code, exc.message),
        on_error=server.counted,
    )


def spawn_server(
    *flags: str, port: int | None = None, env: dict[str, str] | None = None, ready_s: float = 60.0
):
    """Start `python -m tools.sandbox.serve` in a child process; (url, Popen) once /health answers."""
    from turngym.serving.loopback_server import spawn_server as spawn

    return spawn(["-m", "tools.sandbox.serve", *flags], port=port, env=env, ready_s=ready_s)


def host_memory_mb() -> int:
    """Physical memory of this host in MB."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // _MB


def memory_problem(args: argparse.Namespace, host_mb: int | None = None) -> str:
    """Fill in the default --max-memory-mb and say what is wrong with the memory settings ('' if nothing):
    `max_concurrency` runs at the maximum each must fit in the host's memory together."""
    host = host_mb if host_mb is not None else host_memory_mb()
    concurrency = args.max_concurrency
    if concurrency < 1:
        return f"--concurrency must be at least 1, got {concurrency}"
    if args.max_memory_mb is None:
        args.max_memory_mb = min(4096, host // concurrency)
    if args.memory_mb < 1 or args.max_memory_mb < args.memory_mb:
        return (
            f"--memory-mb {args.memory_mb} must be at least 1 and at most --max-memory-mb "
            f"{args.max_memory_mb}; lower --memory-mb or raise --max-memory-mb"
        )
    if args.max_memory_mb * concurrency > host:
        return (
            f"--max-memory-mb {args.max_memory_mb} x --concurrency {concurrency} = "
            f"{args.max_memory_mb * concurrency} MB is more than this host's {host} MB of memory; "
            f"lower one (at most {host // concurrency} MB per run at this concurrency)"
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
    add_server_args(
        parser,
        port=8080,
        token_env=TOKEN_ENV,
        max_concurrency=8,
        what="runs",
        concurrency_aliases=("--concurrency",),
        queue_aliases=("--queue",),
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
    args = parser.parse_args(argv)
    problem = memory_problem(args)
    if problem:
        raise UsageError(problem)
    settings = server_settings(args, token_env=TOKEN_ENV)  # before the sandbox and its spares start
    sandbox = LocalSandbox(
        isolation=args.isolation, memory_mb=args.memory_mb, max_workers=max(args.max_concurrency, 4)
    )
    app = create_app(
        sandbox,
        settings["max_concurrency"],
        args.max_timeout_s,
        max_queue=settings["max_queue"],
        max_memory_mb=args.max_memory_mb,
        max_body_mb=args.max_body_mb,
        body_timeout_s=settings["body_timeout_s"],
        token=settings["token"],
    )
    # uvicorn re-raises SIGTERM once its graceful shutdown is done; as SystemExit the interpreter then
    # exits normally, so the sandbox housekeeping queued by the last runs (unmounting their work dirs,
    # removing their cgroups) and the spares' cleanup still happen instead of dying with the process.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    # On shutdown, runs still going after 5 s are cancelled (their processes killed) rather than awaited.
    run_server(app, args, graceful_s=5)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
