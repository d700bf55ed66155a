"""`python -m rollout.serve [--model-path P] [--host H] [--port N]`: SGLang's native API over HFEngine.

Implements `POST /generate` (input_ids, or text tokenized as plain text: unlike SGLang, special-token
strings in `text` stay text, so a rendered chat prompt must come as input_ids; strictly validated
`sampling_params`, `return_logprob`, `rid`), `GET /health`, `GET /health_generate`, `GET /ready` and
`GET /get_model_info` with SGLang's field names, so `SGLangEngine` (and anything written for SGLang)
can drive the tiny model on a CPU.
Without `--model-path` it serves the embedded tiny model; `--model-path` also takes a model name
(`smollm2-135m-instruct`) or `gguf:<file>`, converted once into a cached directory (rollout/named_models.py),
and a training run or checkpoint folder (exported like `rollout.eval` does).
"""

# No `from __future__ import annotations` here: FastAPI must see the real `Request` class in handlers.
import uuid
from typing import Any

from rollout.sglang_engine import SGLANG_SAMPLING_KEYS
from tools.cli_errors import ArgumentParser, UsageError, check_port_free, run_cli

_REASON_TO_SGLANG = {"completed": "stop", "length": "length", "aborted": "abort"}


def _validate_sampling(params: Any) -> dict[str, Any]:
    if params is None:
        return {}
    if not isinstance(params, dict):
        raise ValueError("sampling_params must be an object")
    unknown = sorted(set(params) - SGLANG_SAMPLING_KEYS)
    if unknown:
        raise ValueError(f"unknown sampling_params keys {unknown}; known: {sorted(SGLANG_SAMPLING_KEYS)}")
    if params.get("n", 1) != 1:
        raise ValueError("only n=1 is supported")
    for key in ("temperature", "top_p"):
        if key in params and not isinstance(params[key], int | float):
            raise ValueError(f"{key} must be a number")
    for key in ("max_new_tokens", "top_k", "sampling_seed"):
        if key in params and params[key] is not None and not isinstance(params[key], int):
            raise ValueError(f"{key} must be an integer")
    if params.get("max_new_tokens", 1) is not None and params.get("max_new_tokens", 1) < 0:
        raise ValueError("max_new_tokens must be >= 0")
    return params


def create_app(engine):
    """A FastAPI app serving `engine` (an HFEngine) with SGLang's native endpoints."""
    from fastapi import FastAPI, Request
    from fastapi.responses import JSONResponse, PlainTextResponse

    from rollout.engine import EngineRequestError
    from tools.chat_encoding import ChatEncoder

    app = FastAPI(title="turngym rollout.serve")
    tok = engine.tokenizer
    text_encoder = ChatEncoder(tok)

    def error(status: int, message: str) -> JSONResponse:
        return JSONResponse({"error": {"message": message, "code": status}}, status_code=status)

    @app.post("/generate")
    async def generate(request: Request):
        try:
            body = await request.json()
        except ValueError:
            return error(400, "body is not valid JSON")
        if not isinstance(body, dict):
            return error(400, "body must be a JSON object")
        try:
            sampling = _validate_sampling(body.get("sampling_params"))
        except ValueError as exc:
            return error(400, str(exc))
        ids = body.get("input_ids")
        if ids is None and isinstance(body.get("text"), str):
            # Plain text, special-token strings included: chat markup comes only as input_ids.
            ids = text_encoder.encode_text(body["text"])
        if not isinstance(ids, list) or not ids or not all(isinstance(t, int) for t in ids):
            return error(400, "input_ids must be a non-empty list of integers (or give text)")
        rid = str(body.get("rid") or uuid.uuid4().hex)
        params = {"max_new_tokens": 128, **sampling}
        if params["max_new_tokens"] == 0:
            out_ids, lps, reason = [], [], "length"
        else:
            try:
                gen = await engine.generate(rid, prompt_ids=ids, sampling_params=params)
            except EngineRequestError as exc:
                return error(400, str(exc))
            out_ids, lps, reason = gen.token_ids, gen.log_probs or [], gen.stop_reason
        finish: dict[str, Any] = {"type": _REASON_TO_SGLANG.get(reason, reason)}
        if reason == "completed" and out_ids:
            finish["matched"] = out_ids[-1]
        elif reason == "length":
            finish["length"] = len(out_ids)
        # SGLang keeps the matched stop token in output_ids but trims it from text.
        text_ids = out_ids[:-1] if reason == "completed" and not sampling.get("no_stop_trim") else out_ids
        meta: dict[str, Any] = {
            "id": rid,
            "finish_reason": finish,
            "prompt_tokens": len(ids),
            "completion_tokens": len(out_ids),
            "cached_tokens": 0,
        }
        if body.get("return_logprob"):
            meta["output_token_logprobs"] = [[lp, t, None] for lp, t in zip(lps, out_ids, strict=True)]
            meta["input_token_logprobs"] = []
        skip = sampling.get("skip_special_tokens", True)
        return {
            "text": tok.decode(text_ids, skip_special_tokens=skip),
            "output_ids": out_ids,
            "meta_info": meta,
        }

    @app.get("/health")
    async def health():
        return PlainTextResponse("")

    @app.get("/ready")
    async def ready():
        return PlainTextResponse("")

    @app.get("/health_generate")
    async def health_generate():
        first = engine.eos_token_ids[0] if engine.eos_token_ids else 0
        await engine.generate("health", prompt_ids=[first], sampling_params={"max_new_tokens": 1})
        return PlainTextResponse("")

    @app.get("/get_model_info")
    async def model_info():
        return {"model_path": engine.name, "tokenizer_path": engine.name, "is_generation": True}

    @app.post("/flush_cache")
    async def flush_cache():
        return PlainTextResponse("Cache flushed.")

    return app


def main(argv: list[str] | None = None) -> int:
    """Serve a model (default: the embedded tiny model) on HTTP with SGLang's native API.

    A mistake (a bad model, a port in use) is one line on stderr and exit code 2, before the model loads.
    """
    return run_cli("rollout.serve", _main, argv)


def _main(argv: list[str] | None) -> int:
    parser = ArgumentParser(prog="python -m rollout.serve", description=__doc__.split("\n")[0])
    parser.add_argument(
        "--model-path",
        default=None,
        help="HF model dir, run/checkpoint folder, model name or gguf:<file> (default: embedded tiny model)",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=30000)
    parser.add_argument("--max-batch-size", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.max_batch_size < 1:
        raise UsageError(f"--max-batch-size {args.max_batch_size}: at least 1")
    check_port_free(args.host, args.port)
    from rollout.checkpoint_export import CheckpointError, resolve_model

    model = args.model_path
    if model is not None:
        try:
            model = str(resolve_model(model))
        except CheckpointError as exc:
            raise UsageError(str(exc)) from None

    import uvicorn

    from rollout.hf_engine import HFEngine

    engine = HFEngine(model, max_batch_size=args.max_batch_size, seed=args.seed)
    uvicorn.run(create_app(engine), host=args.host, port=args.port, log_level="warning", access_log=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
