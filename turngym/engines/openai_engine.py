"""OpenAIEngine: any server that speaks OpenAI's `POST /v1/chat/completions` (vLLM, SGLang, llama.cpp,
Ollama, a hosted API) as an engine for `rollout.eval`, opponents and simulated users.

Evaluation only, not training: a chat API takes messages and returns text, not token ids or their
logprobs. The engine therefore reads the chat messages its caller rendered (`takes_messages`, see
`turngym.chat.engine.chat_kwargs`), and returns the reply re-encoded with a local tokenizer, with no
logprobs (`extra_fields["text_only"]`). Those ids are not the ones the model sampled, so such episodes
measure a model but cannot be trained on. Tool calls the server returns as `tool_calls` are written back
into the text in the episode's call format (hermes by default), so the env reads them as it reads any reply.

Transport failures and busy answers (429/503 with Retry-After) are retried as `SGLangEngine` does, with
its floor under busy waits, its total deadline per request and its cap on the reply's size; other HTTP
errors are not. The key is not sent over plain http to a host beyond loopback (anyone on the path reads
it) unless `allow_http_key=True`; the engine says so in one line on stderr.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any
from urllib.parse import urlsplit

from turngym.engines.engine import EngineError, EngineRequestError, Generation
from turngym.engines.sglang_engine import SGLangEngine

_FINISH = {"stop": "completed", "tool_calls": "completed", "function_call": "completed", "length": "length"}
TEXT_ONLY_NOTE = (
    "engine=openai returns text: its token ids are the local tokenizer's re-encoding with no logprobs, "
    "so these episodes evaluate the model but cannot train it"
)


def chat_endpoint(url: str) -> str:
    """The chat-completions URL of a server given as `http://host:port` or its OpenAI base `.../v1`.

    >>> chat_endpoint("http://127.0.0.1:8000"), chat_endpoint("https://api.example.com/v1/")
    ('http://127.0.0.1:8000/v1/chat/completions', 'https://api.example.com/v1/chat/completions')
    """
    base = url.rstrip("/")
    return f"{base}/chat/completions" if base.endswith("/v1") else f"{base}/v1/chat/completions"


def key_in_clear(url: str) -> bool:
    """True when a key sent to `url` would cross a network in clear: plain http to a host beyond loopback.

    >>> key_in_clear("http://10.0.0.5:8000/v1"), key_in_clear("http://127.0.0.1:8000"), key_in_clear("https://x.org")
    (True, False, False)
    """
    from turngym.serving.cli import is_loopback

    parts = urlsplit(url)
    return parts.scheme.lower() != "https" and not is_loopback(parts.hostname or "")


def to_openai_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Chat messages as the API takes them: tool-call arguments as JSON strings, only the API's fields.

    >>> to_openai_messages([{"role": "assistant", "content": "", "tool_calls": [
    ...     {"id": "c0", "type": "function", "function": {"name": "guess", "arguments": {"number": 5}}}]}])
    [{'role': 'assistant', 'content': '', 'tool_calls': [{'id': 'c0', 'type': 'function', 'function': {'name': 'guess', 'arguments': '{"number": 5}'}}]}]
    """
    out = []
    for message in messages:
        entry: dict[str, Any] = {"role": message.get("role"), "content": message.get("content") or ""}
        for key in ("name", "tool_call_id"):
            if message.get(key) is not None:
                entry[key] = message[key]
        calls = []
        for i, call in enumerate(message.get("tool_calls") or ()):
            fn = call.get("function", call)
            args = fn.get("arguments", {})
            calls.append(
                {
                    "id": str(call.get("id") or f"call_{i}"),
                    "type": "function",
                    "function": {
                        "name": str(fn.get("name", "")),
                        "arguments": args if isinstance(args, str) else json.dumps(args),
                    },
                }
            )
        if calls:
            entry["tool_calls"] = calls
        out.append(entry)
    return out


def to_openai_sampling(params: dict[str, Any] | None) -> dict[str, Any]:
    """verl/SGLang-style sampling params as chat-completions fields (`max_tokens`, `seed`, `stop`, ...).

    `top_k` and stop token ids have no place in OpenAI's API and are left out.

    >>> to_openai_sampling({"max_new_tokens": 8, "temperature": 0, "sampling_seed": 3, "top_k": 5})
    {'max_tokens': 8, 'temperature': 0, 'seed': 3}
    """
    p = dict(params or {})
    out: dict[str, Any] = {}
    max_tokens = p.get("max_tokens", p.get("max_new_tokens"))
    if max_tokens is not None:
        out["max_tokens"] = int(max_tokens)
    for key in ("temperature", "top_p", "presence_penalty", "frequency_penalty"):
        if p.get(key) is not None:
            out[key] = p[key]
    seed = p.get("seed", p.get("sampling_seed"))
    if seed is not None:
        out["seed"] = int(seed)
    stop = p.get("stop")
    if stop:
        out["stop"] = [stop] if isinstance(stop, str) else list(stop)
    return out


class OpenAIEngine(SGLangEngine):
    """Engine over an OpenAI-compatible chat-completions server; evaluation only (see the module docstring).

    Args:
        url: The server, `http://host:port` or its `.../v1` base.
        model: The model name the server serves (the request's `model`).
        tokenizer: A local tokenizer: it renders and counts the episode's tokens and re-encodes replies.
        tool_call_format: How returned `tool_calls` are written into the reply text (hermes, llama3, mistral).
        api_key: Sent as `Authorization: Bearer`; default `$OPENAI_API_KEY`, then `$TURNGYM_MODEL_TOKEN`.
            Held back (with one line on stderr) when `url` is plain http beyond loopback.
        allow_http_key: Send the key over plain http beyond loopback anyway (anyone on the path can read it).
        **kwargs: `SGLangEngine`'s timeouts, retries, deadline and reply cap.

    >>> engine = OpenAIEngine("http://127.0.0.1:8000/v1", "my-model", tokenizer=None)  # doctest: +SKIP
    """

    takes_messages = True

    def __init__(
        self,
        url: str,
        model: str,
        tokenizer: Any,
        *,
        tool_call_format: str = "hermes",
        api_key: str | None = None,
        allow_http_key: bool = False,
        **kwargs: Any,
    ):
        key = api_key
        if key is None:
            key = os.environ.get("OPENAI_API_KEY") or os.environ.get("TURNGYM_MODEL_TOKEN") or None
        if key and key_in_clear(url):
            if allow_http_key:
                print(
                    f"engine=openai: the API key goes to {url} over plain http (allow_http_key)",
                    file=sys.stderr,
                )
            else:
                print(
                    f"engine=openai: the API key was not sent: {url} is plain http beyond loopback "
                    "(use https, or allow_http_key=true to send it in clear)",
                    file=sys.stderr,
                )
                key = ""  # not None: the base class would fall back to $TURNGYM_MODEL_TOKEN
        super().__init__(url, api_key=key, **kwargs)
        self.model = model
        self.tokenizer = tokenizer
        self.tool_call_format = tool_call_format
        self._path = chat_endpoint(self.url)[len(self.url) :]

    async def generate(
        self,
        request_id: str,
        *,
        prompt_ids: list[int],
        sampling_params: dict[str, Any] | None = None,
        messages: list[dict[str, Any]] | None = None,
        tools: list[dict[str, Any]] | None = None,
    ) -> Generation:
        """One chat completion for `messages` (`prompt_ids` only sizes nothing here: the server renders).

        Raises:
            EngineRequestError: no messages were given (a caller that passes only ids), or HTTP 4xx.
            EngineError: a server error, an unreachable server or an answer without a choice.
        """
        if messages is None:
            raise EngineRequestError(
                "engine=openai speaks chat completions and was given only token ids: its caller must pass "
                "messages= (turngym.chat.engine.chat_kwargs)"
            )
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": to_openai_messages(messages),
            **to_openai_sampling(sampling_params),
        }
        if tools:
            payload["tools"] = list(tools)
        body = await self._post(self._path, payload)
        return self._generation(body, sampling_params or {})

    def _generation(self, body: dict[str, Any], sampling_params: dict[str, Any]) -> Generation:
        choices = body.get("choices") if isinstance(body, dict) else None
        if not choices or not isinstance(choices[0], dict):
            raise EngineError(f"{self.url}{self._path} answered without choices: {str(body)[:200]}")
        choice = choices[0]
        message = choice.get("message") or {}
        text = message.get("content") or ""
        calls = message.get("tool_calls") or []
        if calls:
            from turngym.chat.calls import ToolCall, format_tool_calls

            parsed = [ToolCall.from_openai(c, default_id=f"call_{i}") for i, c in enumerate(calls)]
            text = format_tool_calls(parsed, self.tool_call_format, text)
        ids = list(self.tokenizer.encode(text, add_special_tokens=False))
        reason = _FINISH.get(choice.get("finish_reason"), choice.get("finish_reason"))
        if reason == "completed":
            # The server stopped at its end of turn: close the turn with the caller's stop id, as a token
            # engine's reply ends with the stop token it sampled.
            stop_ids = list(sampling_params.get("stop_token_ids") or ())
            end = stop_ids[0] if stop_ids else getattr(self.tokenizer, "eos_token_id", None)
            if end is not None:
                ids.append(int(end))
        usage = body.get("usage") or {}
        extra: dict[str, Any] = {"text_only": True}
        extra.update({k: usage[k] for k in ("prompt_tokens", "completion_tokens") if k in usage})
        return Generation(token_ids=ids, log_probs=None, stop_reason=reason, extra_fields=extra)

    async def served_model(self) -> str | None:
        """The name turngym knows the served model by (``embedded``, a named model), else None.

        Asks ``GET /v1/models`` and reads the entry whose id is `model` (or the only one): its
        ``turngym_model`` when turngym's server answers, else its id looked up as a model directory.

        Raises:
            EngineError: the server gave no JSON answer within the deadline.
        """
        from turngym.engines.named_models import served_model_name

        listing = await self._get_json(self._path.replace("chat/completions", "models"))
        entries = [e for e in listing.get("data") or [] if isinstance(e, dict)]
        chosen = [e for e in entries if e.get("id") == self.model] or (entries if len(entries) == 1 else [])
        return served_model_name(chosen[0], "id") if chosen else None

    async def ready(self) -> bool:
        """True when the server answers `GET /v1/models` with 200."""
        return await self._answers_ok(self._path.replace("chat/completions", "models"))
