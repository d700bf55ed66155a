"""The model server's OpenAI-compatible routes: ``/v1/chat/completions``, ``/v1/completions``, ``/v1/models``.

So any OpenAI client, and turngym's own ``engine=openai`` (``rollout.eval engine=openai
url=http://127.0.0.1:30000 model=embedded``), can use ``python -m turngym.engines.serve``.

Non-streaming only: ``stream: true`` is refused (400), as are the fields that would change the answer and
that this server cannot honour (``n`` > 1, ``logprobs``, ``logit_bias``, non-zero penalties, ``echo``,
``best_of`` > 1, ``suffix``, a ``response_format`` other than text) and any field OpenAI's API does not
have. The server serves one model: the request's ``model`` is echoed back, whatever it names.

Chat: the messages (and ``tools``) are rendered with the model's own chat template, contents as plain
text (``ChatEncoder``: a special-token string inside a message never becomes markup). With ``tools``
given (and ``tool_choice`` not ``none``) the reply is read for tool calls in the format the template
writes (``guess_format``), and returned as ``tool_calls`` with ``finish_reason: tool_calls``.
Completions: ``prompt`` is one string (tokenized as plain text, like ``/generate``'s ``text``) or one list
of token ids; ``max_tokens`` defaults to 16, as in OpenAI's API.

The handlers take the server's shared state (``turngym.engines.serve.ModelServer``) as ``server``.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from turngym.engines.named_models import SERVED_MODEL_FIELD
from turngym.serving import RequestError, parse_json_object, read_body

# Fields a request may carry that change nothing here (or are read by name below).
_CHAT_FIELDS = frozenset(
    {
        "model",
        "messages",
        "max_tokens",
        "max_completion_tokens",
        "temperature",
        "top_p",
        "seed",
        "stop",
        "n",
        "stream",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "user",
        "metadata",
        "store",
        "logprobs",
        "top_logprobs",
        "logit_bias",
        "presence_penalty",
        "frequency_penalty",
        "response_format",
    }
)
_COMPLETION_FIELDS = frozenset(
    {
        "model",
        "prompt",
        "max_tokens",
        "temperature",
        "top_p",
        "seed",
        "stop",
        "n",
        "stream",
        "user",
        "logprobs",
        "logit_bias",
        "presence_penalty",
        "frequency_penalty",
        "echo",
        "best_of",
        "suffix",
    }
)
_ROLES = ("system", "developer", "user", "assistant", "tool")
_FINISH = {"completed": "stop", "length": "length", "aborted": "stop"}
CHAT_DEFAULT_MAX_TOKENS = 128  # the native /generate's default
COMPLETION_DEFAULT_MAX_TOKENS = 16  # OpenAI's documented default for /v1/completions


def _bad(message: str) -> RequestError:
    return RequestError(400, "bad_request", message)


def _refuse_unsupported(body: dict[str, Any]) -> None:
    if body.get("stream"):
        raise _bad("stream: true is not supported; this server answers non-streaming requests only")
    if body.get("n", 1) != 1 or body.get("best_of", 1) != 1:
        raise _bad("only n=1 (and best_of=1) is supported")
    for key in ("logprobs", "top_logprobs", "logit_bias", "echo", "suffix"):
        if body.get(key):
            raise _bad(f"{key} is not supported by this server; leave it out")
    for key in ("presence_penalty", "frequency_penalty"):
        if body.get(key) not in (None, 0, 0.0):
            raise _bad(f"{key} is not supported by this server; leave it out (or 0)")
    fmt = body.get("response_format")
    if fmt is not None and (not isinstance(fmt, dict) or fmt.get("type") != "text"):
        raise _bad("response_format: only {'type': 'text'} is supported")


def sampling_from_request(body: dict[str, Any], default_max_tokens: int) -> dict[str, Any]:
    """The engine's sampling parameters from an OpenAI request's fields; RequestError (400) for a bad one.

    Args:
        body: the request (``max_tokens``/``max_completion_tokens``, ``temperature``, ``top_p``, ``seed``,
            ``stop``).
        default_max_tokens: when neither token limit is given.

    Returns:
        ``max_new_tokens``, ``temperature``, ``top_p``, ``sampling_seed`` and ``stop`` as the engine takes
        them (only those given, besides the token limit).

    Example:
        >>> sampling_from_request({"max_tokens": 8, "temperature": 0, "seed": 3, "stop": "\\n"}, 16)
        {'max_new_tokens': 8, 'temperature': 0, 'sampling_seed': 3, 'stop': ['\\n']}
    """
    limit = body.get("max_completion_tokens", body.get("max_tokens"))
    if limit is None:
        limit = default_max_tokens
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        raise _bad(f"max_tokens must be a whole number >= 1, got {limit!r}")
    params: dict[str, Any] = {"max_new_tokens": limit}
    for key in ("temperature", "top_p"):
        value = body.get(key)
        if value is None:
            continue
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise _bad(f"{key} must be a number, got {value!r}")
        params[key] = value
    seed = body.get("seed")
    if seed is not None:
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise _bad(f"seed must be an integer, got {seed!r}")
        params["sampling_seed"] = seed
    stop = body.get("stop")
    if stop is not None:
        stops = [stop] if isinstance(stop, str) else stop
        if not isinstance(stops, list) or not all(isinstance(s, str) and s for s in stops) or len(stops) > 16:
            raise _bad("stop must be a non-empty string or a list of at most 16 of them")
        params["stop"] = list(stops)
    from turngym.engines.engine import sampling_problem

    problem = sampling_problem(params)  # finite and bounded: no value reaches the sampler as an HTTP 500
    if problem is not None:
        raise _bad(problem)
    return params


def _text_content(content: Any, where: str) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: only text ones
        texts = []
        for part in content:
            if (
                not isinstance(part, dict)
                or part.get("type") != "text"
                or not isinstance(part.get("text"), str)
            ):
                raise _bad(
                    f"{where}.content: only text parts ({{'type': 'text', 'text': ...}}) are supported"
                )
            texts.append(part["text"])
        return "".join(texts)
    raise _bad(f"{where}.content must be a string, a list of text parts or null")


def template_messages(messages: Any) -> list[dict[str, Any]]:
    """OpenAI chat messages as a chat template takes them; RequestError (400) for a malformed one.

    Content parts become one string, ``developer`` is a ``system`` message, and tool-call arguments
    (JSON strings in the API) become objects, as templates render them.

    Example:
        >>> template_messages([{"role": "assistant", "content": None, "tool_calls": [{"id": "c0",
        ...     "type": "function", "function": {"name": "guess", "arguments": '{"number": 5}'}}]}])
        [{'role': 'assistant', 'content': '', 'tool_calls': [{'id': 'c0', 'type': 'function', 'function': {'name': 'guess', 'arguments': {'number': 5}}}]}]
    """
    from turngym.chat.calls import ToolCall

    if not isinstance(messages, list) or not messages:
        raise _bad("messages must be a non-empty list of {'role', 'content'} objects")
    out = []
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(message, dict) or message.get("role") not in _ROLES:
            raise _bad(f"{where} must be an object with role one of {', '.join(_ROLES)}")
        role = "system" if message["role"] == "developer" else message["role"]
        entry: dict[str, Any] = {"role": role, "content": _text_content(message.get("content"), where)}
        for key in ("name", "tool_call_id"):
            if isinstance(message.get(key), str):
                entry[key] = message[key]
        calls = message.get("tool_calls")
        if calls:
            if not isinstance(calls, list) or not all(isinstance(c, dict) for c in calls):
                raise _bad(f"{where}.tool_calls must be a list of tool-call objects")
            entry["tool_calls"] = [
                ToolCall.from_openai(c, default_id=f"call_{j}").to_openai() for j, c in enumerate(calls)
            ]
        out.append(entry)
    return out


async def _generate(server: Any, ids: list[int], params: dict[str, Any]) -> tuple[list[int], str]:
    from turngym.engines.engine import EngineRequestError

    try:
        async with server.gate.admitted_slot():
            gen = await server.engine.generate(
                f"oa-{uuid.uuid4().hex}", prompt_ids=ids, sampling_params=params
            )
    except EngineRequestError as exc:
        raise _bad(str(exc)) from None
    return list(gen.token_ids), gen.stop_reason


def _reply_text(server: Any, out_ids: list[int], reason: str) -> str:
    # The matched stop token closes the turn; it is not part of the text (as OpenAI servers answer).
    text_ids = out_ids[:-1] if reason == "completed" and out_ids else out_ids
    return server.engine.tokenizer.decode(text_ids, skip_special_tokens=True)


def _usage(prompt: int, completion: int) -> dict[str, int]:
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


async def chat_completions(server: Any, request: Any) -> dict[str, Any]:
    """POST /v1/chat/completions: one non-streaming chat completion (see the module docstring)."""
    from turngym.chat.calls import guess_format, parse_tool_calls
    from turngym.chat.render_deadline import RenderTimeout

    raw = await read_body(request, server.max_body_bytes, server.body_timeout_s)
    body = parse_json_object(raw, fields=_CHAT_FIELDS)
    _refuse_unsupported(body)
    messages = template_messages(body.get("messages"))
    tools = body.get("tools")
    if tools is not None and (not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools)):
        raise _bad("tools must be a list of {'type': 'function', 'function': {...}} objects")
    params = sampling_from_request(body, CHAT_DEFAULT_MAX_TOKENS)
    try:
        ids = server.text_encoder.encode_chat(messages, tools=tools or None, add_generation_prompt=True)
    except RenderTimeout as exc:
        raise _bad(str(exc)) from None
    except Exception as exc:  # noqa: BLE001 - the template refused these messages (a jinja raise_exception)
        raise _bad(f"the chat template cannot render these messages: {type(exc).__name__}: {exc}") from None
    out_ids, reason = await _generate(server, ids, params)
    text = _reply_text(server, out_ids, reason)
    message: dict[str, Any] = {"role": "assistant", "content": text}
    finish = _FINISH.get(reason, reason)
    if tools and body.get("tool_choice") != "none":
        template = getattr(server.engine.tokenizer, "chat_template", None) or ""
        parsed = parse_tool_calls(text, guess_format(str(template)))
        if parsed.tool_calls:
            message = {
                "role": "assistant",
                "content": parsed.content or None,
                "tool_calls": [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": call.arguments_json()},
                    }
                    for call in parsed.tool_calls
                ],
            }
            finish = "tool_calls" if finish == "stop" else finish
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": str(body.get("model") or server.engine.name),
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": _usage(len(ids), len(out_ids)),
    }


async def completions(server: Any, request: Any) -> dict[str, Any]:
    """POST /v1/completions: one non-streaming text completion of one prompt (see the module docstring)."""
    raw = await read_body(request, server.max_body_bytes, server.body_timeout_s)
    body = parse_json_object(raw, fields=_COMPLETION_FIELDS)
    _refuse_unsupported(body)
    prompt = body.get("prompt")
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str | list):
        prompt = prompt[0]  # a batch of one
    if isinstance(prompt, str) and prompt:
        ids = server.text_encoder.encode_text(prompt)  # plain text: chat markup comes only as token ids
    elif (
        isinstance(prompt, list)
        and prompt
        and all(isinstance(t, int) and not isinstance(t, bool) for t in prompt)
    ):
        ids = list(prompt)
    else:
        raise _bad("prompt must be one non-empty string or one non-empty list of token ids (no batches)")
    params = sampling_from_request(body, COMPLETION_DEFAULT_MAX_TOKENS)
    out_ids, reason = await _generate(server, ids, params)
    return {
        "id": f"cmpl-{uuid.uuid4().hex}",
        "object": "text_completion",
        "created": int(time.time()),
        "model": str(body.get("model") or server.engine.name),
        "choices": [
            {
                "index": 0,
                "text": _reply_text(server, out_ids, reason),
                "finish_reason": _FINISH.get(reason, reason),
                "logprobs": None,
            }
        ],
        "usage": _usage(len(ids), len(out_ids)),
    }


async def models(server: Any, _request: Any) -> dict[str, Any]:
    """GET /v1/models: the one model this server serves, with its turngym name when it has one
    (``turngym_model``: ``embedded`` or a named model, else None), as servers add fields of their own."""
    entry = {"id": str(server.engine.name), "object": "model", "created": 0, "owned_by": "turngym"}
    entry[SERVED_MODEL_FIELD] = getattr(server, "model_name", None)
    return {"object": "list", "data": [entry]}


OPENAI_ROUTES = [
    ("POST", "/v1/chat/completions", chat_completions),
    ("POST", "/v1/completions", completions),
    ("GET", "/v1/models", models),
]
