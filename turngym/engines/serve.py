"""`python -m turngym.engines.serve [--model-path P] [--host H] [--port N]`: SGLang's native API and OpenAI's
(`/v1/chat/completions`, `/v1/completions`, `/v1/models`; non-streaming) over HFEngine.

Implements `POST /generate` (input_ids, or text tokenized as plain text: unlike SGLang, special-token
strings in `text` stay text, so a rendered chat prompt must come as input_ids; strictly validated
`sampling_params`, `return_logprob`, `rid`), `GET /health`, `GET /health_generate`, `GET /ready` and
`GET /get_model_info` with SGLang's field names (plus `turngym_model`: `embedded` or a named model's name,
which `rollout.eval engine=sglang|openai` reads to use that model's budgets), so `SGLangEngine` (and anything written for SGLang)
can drive the tiny model on a CPU. The OpenAI routes (turngym/engines/openai_api.py) serve any OpenAI
client, turngym's own `engine=openai` included: `rollout.eval engine=openai url=http://127.0.0.1:30000
model=embedded`; they answer non-streaming requests only (`stream: true` is refused with 400).
Without `--model-path` it serves the embedded tiny model; `--model-path` also takes a model name
(`smollm2-135m-instruct`) or `gguf:<file>`, converted once into a cached directory (turngym/engines/named_models.py),
and a training run or checkpoint folder (exported like `rollout.eval` does).

The gate, the body limits, the token and the error shape are the shared serving layer's (`turngym.serving`):
at most `--max-concurrency` generations in the engine and `--max-queue` waiting (429 `overloaded`
beyond), and every failure is `{"error": {"code", "message"}}` (400 `bad_request` for a bad body,
sampling parameter or prompt). Beyond loopback the server needs `--token` (or TURNGYM_MODEL_TOKEN),
which `SGLangEngine(api_key=...)` sends as SGLang's `--api-key` clients do.
"""

from __future__ import annotations

import functools
import uuid
from dataclasses import dataclass
from typing import Any

from turngym.common.cli_errors import ArgumentParser, UsageError, run_cli
from turngym.engines.engine import sampling_problem
from turngym.engines.named_models import SERVED_MODEL_FIELD
from turngym.engines.openai_api import OPENAI_ROUTES
from turngym.engines.sglang_engine import SGLANG_SAMPLING_KEYS
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
from turngym.serving.listening import say_when_listening

#: The environment variable that may hold the server's token (SGLangEngine's `api_key` reads it too).
TOKEN_ENV = "TURNGYM_MODEL_TOKEN"
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
    problem = sampling_problem(params)  # finite and bounded: no value reaches the sampler as an HTTP 500
    if problem is not None:
        raise ValueError(problem)
    return params


@dataclass
class ModelServer:
    """What the handlers share: the engine, its tokenizer's text encoder, the gate and the body limits, and
    the model's name when it is one turngym knows (`turngym.engines.named_models.model_name_of`)."""

    engine: Any
    text_encoder: Any
    gate: AdmissionGate
    max_body_bytes: int
    body_timeout_s: float
    model_name: str | None = None


# --- the handlers: one per route -----------------------------------------------------------------------


async def generate(server: ModelServer, request: Any) -> dict[str, Any]:
    """POST /generate: SGLang's native generate (ids, logprobs and finish reason in its field names)."""
    from turngym.engines.engine import EngineRequestError

    body = parse_json_object(await read_body(request, server.max_body_bytes, server.body_timeout_s))
    try:
        sampling = _validate_sampling(body.get("sampling_params"))
    except ValueError as exc:
        raise RequestError(400, "bad_request", str(exc)) from None
    ids = body.get("input_ids")
    if ids is None and isinstance(body.get("text"), str):
        # Plain text, special-token strings included: chat markup comes only as input_ids.
        ids = server.text_encoder.encode_text(body["text"])
    if not isinstance(ids, list) or not ids or not all(isinstance(t, int) for t in ids):
        raise RequestError(
            400, "bad_request", "input_ids must be a non-empty list of integers (or give text)"
        )
    rid = str(body.get("rid") or uuid.uuid4().hex)
    params = {"max_new_tokens": 128, **sampling}
    if params["max_new_tokens"] == 0:
        out_ids, lps, reason = [], [], "length"
    else:
        try:
            async with server.gate.admitted_slot():
                gen = await server.engine.generate(rid, prompt_ids=ids, sampling_params=params)
        except EngineRequestError as exc:
            raise RequestError(400, "bad_request", str(exc)) from None
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
        "text": server.engine.tokenizer.decode(text_ids, skip_special_tokens=skip),
        "output_ids": out_ids,
        "meta_info": meta,
    }


async def alive(_server: ModelServer, _request: Any) -> Any:
    """GET /health and /ready: 200 with an empty body once the model is loaded (SGLang's answer)."""
    from starlette.responses import PlainTextResponse

    return PlainTextResponse("")


async def health_generate(server: ModelServer, _request: Any) -> Any:
    """GET /health_generate: 200 once one token has been generated (through the gate, like any request)."""
    from starlette.responses import PlainTextResponse

    first = server.engine.eos_token_ids[0] if server.engine.eos_token_ids else 0
    async with server.gate.admitted_slot():
        await server.engine.generate("health", prompt_ids=[first], sampling_params={"max_new_tokens": 1})
    return PlainTextResponse("")


async def model_info(server: ModelServer, _request: Any) -> dict[str, Any]:
    """GET /get_model_info: SGLang's model description, and ``turngym_model``: the model's name when it is
    the embedded or a named model (None otherwise), so a client picks that model's budgets."""
    return {
        "model_path": server.engine.name,
        "tokenizer_path": server.engine.name,
        "is_generation": True,
        SERVED_MODEL_FIELD: server.model_name,
    }


async def flush_cache(_server: ModelServer, _request: Any) -> Any:
    """POST /flush_cache: SGLang's cache flush (nothing to flush between requests here)."""
    from starlette.responses import PlainTextResponse

    return PlainTextResponse("Cache flushed.")


ROUTES = [
    ("POST", "/generate", generate),
    ("GET", "/health", alive),
    ("GET", "/ready", alive),
    ("GET", "/health_generate", health_generate),
    ("GET", "/get_model_info", model_info),
    ("POST", "/flush_cache", flush_cache),
    *OPENAI_ROUTES,  # /v1/chat/completions, /v1/completions, /v1/models (turngym/engines/openai_api.py)
]


def create_app(
    engine: Any,
    *,
    max_concurrency: int = 256,
    max_queue: int | None = None,
    max_body_mb: float = 16.0,
    body_timeout_s: float = 30.0,
    token: str | None = None,
):
    """A Starlette app serving `engine` with SGLang's native endpoints.

    Args:
        engine: the engine (an `HFEngine`: `generate`, `tokenizer`, `eos_token_ids`, `name`).
        max_concurrency: generations in the engine at once (it batches them; more wait in the gate).
        max_queue: generations waiting beyond those (429 beyond); default 4 x max_concurrency.
        max_body_mb: larger request bodies get 413.
        body_timeout_s: a body not received whole within this gets 408.
        token: when set, every route but /health and /ready needs `Authorization: Bearer <token>`.

    Returns:
        The app (run it with `turngym.serving.run_server` or uvicorn); `app.state.server` holds the engine
        and the gate.
    """
    from turngym.chat.encoder import ChatEncoder
    from turngym.engines.named_models import model_name_of

    server = ModelServer(
        engine=engine,
        text_encoder=ChatEncoder(engine.tokenizer),
        gate=AdmissionGate(
            max_concurrency, 4 * max_concurrency if max_queue is None else max_queue, what="generations"
        ),
        max_body_bytes=int(max_body_mb * 1024 * 1024),
        body_timeout_s=body_timeout_s,
        model_name=model_name_of(str(engine.name)),
    )
    app = make_app(
        [(method, path, functools.partial(handler, server)) for method, path, handler in ROUTES],
        token=token,
        open_paths=("/health", "/ready"),
    )
    app.state.server = server
    return app


def main(argv: list[str] | None = None) -> int:
    """Serve a model (default: the embedded tiny model) on HTTP with SGLang's native API and OpenAI's.

    A mistake (a bad model, a port in use) is one line on stderr and exit code 2, before the model loads.
    Once it accepts connections it says so in one line on stderr (`listening on http://...`); Ctrl-C stops
    it with one line and exit code 130.
    """
    return run_cli("turngym.engines.serve", _main, argv)


def _main(argv: list[str] | None) -> int:
    parser = ArgumentParser(
        prog="python -m turngym.engines.serve", description=" ".join(__doc__.split("\n\n")[0].split("\n"))
    )
    parser.add_argument(
        "--model-path",
        default=None,
        help="HF model dir, run/checkpoint folder, model name or gguf:<file> (default: embedded tiny model)",
    )
    add_server_args(parser, port=30000, token_env=TOKEN_ENV, max_concurrency=256, what="generations")
    parser.add_argument("--max-batch-size", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--trust-checkpoint",
        action="store_true",
        help="load a checkpoint's shards with the full unpickler (it may run code: only checkpoints you "
        "trust); by default they load as tensors only and anything else is refused",
    )
    args = parser.parse_args(argv)
    if args.max_batch_size < 1:
        raise UsageError(f"--max-batch-size {args.max_batch_size}: at least 1")
    settings = server_settings(args, token_env=TOKEN_ENV)
    from turngym.engines.checkpoint_export import CheckpointError, resolve_model

    model = args.model_path
    if model is not None:
        try:
            model = str(resolve_model(model, trust_checkpoint=args.trust_checkpoint))
        except CheckpointError as exc:
            raise UsageError(str(exc)) from None

    from turngym.engines.hf_engine import HFEngine

    engine = HFEngine(model, max_batch_size=args.max_batch_size, seed=args.seed)
    app = create_app(
        engine,
        max_concurrency=settings["max_concurrency"],
        max_queue=settings["max_queue"],
        max_body_mb=args.max_body_mb,
        body_timeout_s=settings["body_timeout_s"],
        token=settings["token"],
    )
    served = say_when_listening(
        "turngym.engines.serve", args.host, args.port, f"model {args.model_path or 'embedded'}"
    )
    try:
        run_server(app, args)
    finally:
        served.set()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
