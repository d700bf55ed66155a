"""`python -m tools.sandbox.serve --port 8080`: a SandboxFusion-compatible `/run_code` server on LocalSandbox."""

from __future__ import annotations

import argparse
import asyncio
import base64
import binascii
from typing import Any

import pydantic

from tools.sandbox.local import LocalSandbox
from tools.sandbox.result import SandboxResult


class RunCodeBody(pydantic.BaseModel):
    """SandboxFusion's RunCodeRequest, plus the `memory_limit_MB` its client drops."""

    code: str
    language: str = "python"
    compile_timeout: float = pydantic.Field(10, gt=0)
    run_timeout: float = pydantic.Field(10, gt=0)
    memory_limit_MB: int = -1
    stdin: str | None = None
    files: dict[str, str | None] = {}
    fetch_files: list[str] = []


def to_fusion(result: SandboxResult, fetched: dict[str, bytes] | None = None) -> dict[str, Any]:
    """Render a SandboxResult as SandboxFusion's RunCodeResponse JSON."""
    files = {k: base64.b64encode(v).decode() for k, v in (fetched or result.files).items()}
    if result.status == "sandbox_error":
        return {
            "status": "SandboxError",
            "message": result.message,
            "compile_result": None,
            "run_result": None,
            "files": files,
        }
    compile_result = None
    if result.compile_output or result.status == "compile_error":
        compile_result = {
            "status": "TimeLimitExceeded"
            if "timed out" in result.message and result.status == "compile_error"
            else "Finished",
            "execution_time": result.duration_s if result.status == "compile_error" else None,
            "return_code": result.exit_code if result.status == "compile_error" else 0,
            "stdout": "",
            "stderr": result.compile_output,
        }
    run_result = None
    if result.status != "compile_error":
        run_result = {
            "status": "TimeLimitExceeded" if result.status == "timeout" else "Finished",
            "execution_time": result.duration_s,
            "return_code": result.exit_code,
            "stdout": result.stdout,
            "stderr": result.stderr,
        }
    return {
        "status": "Success" if result.status == "ok" else "Failed",
        "message": result.message,
        "compile_result": compile_result,
        "run_result": run_result,
        "files": files,
    }


def create_app(sandbox: LocalSandbox | None = None, max_concurrency: int = 8, max_timeout_s: float = 300.0):
    """The FastAPI app: POST /run_code, GET /health (and /v1/ping); JSON errors for bad requests."""
    from fastapi import FastAPI, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse

    sandbox = sandbox or LocalSandbox()
    gate = asyncio.Semaphore(max_concurrency)
    state = {"running": 0, "served": 0}

    app = FastAPI(title="turngym sandbox", version="1")

    @app.exception_handler(RequestValidationError)
    async def bad_request(_request: Request, exc: RequestValidationError):
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'] if p != 'body') or 'body'}: {err['msg']}"
            for err in exc.errors()
        )
        return JSONResponse(
            status_code=400, content={"status": "SandboxError", "message": f"bad request: {problems}"}
        )

    @app.get("/health")
    async def health():
        return {
            "status": "ok",
            "isolation": sandbox.isolation,
            "running": state["running"],
            "max_concurrency": max_concurrency,
            "served": state["served"],
        }

    @app.get("/v1/ping")
    async def ping():
        return "pong"

    @app.post("/run_code")
    async def run_code(body: RunCodeBody):
        try:
            files = {k: base64.b64decode(v, validate=True) for k, v in body.files.items() if v is not None}
        except (binascii.Error, ValueError) as exc:
            return JSONResponse(
                status_code=400,
                content={"status": "SandboxError", "message": f"bad request: files must be base64 ({exc})"},
            )
        memory = body.memory_limit_MB if body.memory_limit_MB > 0 else None
        async with gate:
            state["running"] += 1
            try:
                sandbox.compile_timeout_s = min(body.compile_timeout, max_timeout_s)
                result = await sandbox.arun(
                    body.code,
                    body.language,
                    timeout_s=min(body.run_timeout, max_timeout_s),
                    memory_mb=memory,
                    stdin=body.stdin,
                    files=files,
                    fetch_files=body.fetch_files,
                )
            finally:
                state["running"] -= 1
                state["served"] += 1
        return to_fusion(result)

    return app


def main(argv: list[str] | None = None) -> None:
    """Command line entry point."""
    parser = argparse.ArgumentParser(
        description="SandboxFusion-compatible /run_code server backed by LocalSandbox"
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--max-concurrency", type=int, default=8)
    parser.add_argument("--isolation", choices=["auto", "bwrap", "none"], default="auto")
    parser.add_argument(
        "--memory-mb", type=int, default=512, help="default when a request sets no memory_limit_MB"
    )
    parser.add_argument("--log-level", default="warning")
    args = parser.parse_args(argv)
    import uvicorn

    sandbox = LocalSandbox(
        isolation=args.isolation, memory_mb=args.memory_mb, max_workers=max(args.max_concurrency, 4)
    )
    app = create_app(sandbox, args.max_concurrency)
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level, access_log=False)


if __name__ == "__main__":
    main()
