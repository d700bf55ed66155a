"""Issue 45, item 7: `engine=openai` against a hostile OpenAI-compatible server (a real one, written here,
on a real socket). Before: `429` with `Retry-After: 0` was asked again at once, forever (2807 requests in
150 s); a 64 MB reply was read whole and parsed; a reply trickled a byte at a time hung the run (httpx's
timeout is per read); and `$OPENAI_API_KEY` went to any URL, plain http beyond loopback included.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
import socket
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from turngym.engines.engine import EngineError
from turngym.engines.openai_engine import OpenAIEngine

MESSAGES = [{"role": "user", "content": "Guess a number."}]


class HostileServer:
    """`POST /v1/chat/completions` answered by `act(handler)`; counts requests, keeps their headers."""

    def __init__(self, act: Callable[[BaseHTTPRequestHandler], None], host: str = "127.0.0.1"):
        self.requests = 0
        self.headers: list[dict[str, str]] = []
        self.stop = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                self.rfile.read(int(self.headers.get("content-length") or 0))
                server.requests += 1
                server.headers.append({k.lower(): v for k, v in self.headers.items()})
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    act(self)  # a client that gave up is what the tests want

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer((host, 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://{host}:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> HostileServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def _reply(handler: BaseHTTPRequestHandler, status: int, body: bytes, **headers: str) -> None:
    handler.send_response(status)
    for key, value in headers.items():
        handler.send_header(key.replace("_", "-"), value)
    handler.send_header("content-length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def _ok(handler: BaseHTTPRequestHandler) -> None:
    choice = {"index": 0, "message": {"role": "assistant", "content": "50"}, "finish_reason": "stop"}
    _reply(handler, 200, json.dumps({"choices": [choice]}).encode(), content_type="application/json")


def _generate(engine: OpenAIEngine, patience: float = 30.0):
    """One request, with an outer bound so that the old code's endless loop fails the test instead of
    hanging it."""

    async def run():
        try:
            return await asyncio.wait_for(
                engine.generate("r", prompt_ids=[1], sampling_params={}, messages=MESSAGES), patience
            )
        finally:
            await engine.aclose()

    return asyncio.run(run())


def test_retry_after_zero_is_not_asked_again_at_once(tokenizer):
    def busy(handler):
        _reply(handler, 429, b'{"error": "overloaded"}', retry_after="0")

    with HostileServer(busy) as server:
        engine = OpenAIEngine(server.url, "m", tokenizer, busy_wait_s=3.0, api_key="")
        with pytest.raises(EngineError, match="HTTP 429.*overloaded"):
            _generate(engine, patience=20)
    # Waits of 0.5 s and 1 s fit the 3 s budget, the next (2 s) does not: three requests in all, where
    # the old client asked thousands of times and never stopped.
    assert server.requests == 3


def test_a_request_has_one_total_deadline_busy_waits_included(tokenizer):
    def busy(handler):
        _reply(handler, 503, b"busy", retry_after="0")

    with HostileServer(busy) as server:
        engine = OpenAIEngine(server.url, "m", tokenizer, busy_wait_s=1e6, deadline_s=2.0, api_key="")
        with pytest.raises(EngineError, match=r"no complete answer within 2 s.*deadline_s") as refused:
            _generate(engine)
    assert "\n" not in str(refused.value)
    assert server.requests <= 3  # 0.5 s, then 1 s, and the deadline falls during the 2 s wait


def test_a_never_ending_reply_ends_at_the_deadline(tokenizer):
    def trickle(handler):
        handler.send_response(200)
        handler.send_header("content-type", "application/json")
        handler.end_headers()
        handler.wfile.write(b'{"choices": [{"message": {"content": "')
        while not server.stop.is_set():  # one byte every 0.1 s: no single read ever times out
            handler.wfile.write(b"a")
            handler.wfile.flush()
            time.sleep(0.1)

    with HostileServer(trickle) as server:
        engine = OpenAIEngine(server.url, "m", tokenizer, deadline_s=2.0, api_key="")
        with pytest.raises(EngineError, match="no complete answer within 2 s"):
            _generate(engine)


def test_a_64_mb_reply_is_refused_without_being_read_whole(tokenizer):
    chunk = b"x" * 2**20

    def huge(handler):  # no Content-Length: the size shows only while reading
        handler.send_response(200)
        handler.send_header("content-type", "application/json")
        handler.send_header("connection", "close")
        handler.end_headers()
        for _ in range(64):
            handler.wfile.write(chunk)

    with HostileServer(huge) as server:
        engine = OpenAIEngine(server.url, "m", tokenizer, api_key="")
        with pytest.raises(EngineError, match="larger than 16777216 bytes.*max_reply_bytes") as refused:
            _generate(engine)
    assert "\n" not in str(refused.value)


def test_a_declared_oversized_reply_is_refused_before_reading():
    def declared(handler):
        handler.send_response(200)
        handler.send_header("content-length", str(64 * 2**20))
        handler.end_headers()
        handler.wfile.write(b"{")

    with HostileServer(declared) as server:
        engine = OpenAIEngine(server.url, "m", tokenizer=None, api_key="", max_reply_bytes=2**20)
        with pytest.raises(EngineError, match="declared 67108864 bytes"):
            _generate(engine)


def test_a_compressed_reply_is_refused_since_identity_was_asked():
    bomb = gzip.compress(b" " * 64 * 2**20)  # about 64 KB on the wire, 64 MB once decoded

    def compressed(handler):
        _reply(handler, 200, bomb, content_encoding="gzip", content_type="application/json")

    with HostileServer(compressed) as server:
        engine = OpenAIEngine(server.url, "m", tokenizer=None, api_key="")
        with pytest.raises(EngineError, match="gzip-encoded reply"):
            _generate(engine)
    assert server.headers[0]["accept-encoding"] == "identity"


def _address_beyond_loopback() -> str:
    """This machine's address on its own network (no packet is sent: a UDP socket only picks a route)."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("192.0.2.254", 9))
        address = probe.getsockname()[0]
    except OSError:
        address = "127.0.0.1"
    finally:
        probe.close()
    if address.startswith("127."):
        pytest.skip("this machine has no address beyond loopback")
    return address


def test_the_key_is_not_sent_over_plain_http_beyond_loopback(tokenizer, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    monkeypatch.setenv("TURNGYM_MODEL_TOKEN", "also-secret")
    with HostileServer(_ok, host=_address_beyond_loopback()) as server:
        out = _generate(OpenAIEngine(server.url, "m", tokenizer))
        line = capsys.readouterr().err.strip()
        _generate(OpenAIEngine(server.url, "m", tokenizer, allow_http_key=True))
    assert out.token_ids
    assert "authorization" not in server.headers[0]
    assert "not sent" in line and "allow_http_key=true" in line and "\n" not in line
    assert server.headers[1]["authorization"] == "Bearer sk-secret"


def test_the_key_still_goes_to_loopback_over_http(tokenizer, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    with HostileServer(_ok) as server:
        _generate(OpenAIEngine(server.url, "m", tokenizer))
    assert server.headers[0]["authorization"] == "Bearer sk-secret"


def test_rollout_eval_names_the_key_it_held_back(monkeypatch, capsys):
    from rollout import eval as rollout_eval

    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    with HostileServer(_ok, host=_address_beyond_loopback()) as server:
        argv = ["env=guess-number-v0", "engine=openai", f"url={server.url}", "model=m"]
        assert rollout_eval.cli(argv + ["n=1", "max_turns=1", "baselines=false"]) == 0
        assert rollout_eval.cli(argv + ["n=1", "max_turns=1", "baselines=false", "allow_http_key=true"]) == 0
    assert "authorization" not in server.headers[0]
    assert server.headers[1]["authorization"] == "Bearer sk-secret"
    assert "allow_http_key=true to send it in clear" in capsys.readouterr().err


def test_rollout_eval_takes_the_deadline_as_a_key(capsys):
    """Before, rollout.eval had no key for it: `deadline_s=2` was an unknown key (exit 2), and a
    never-ending reply held the command for the engine's default 720 s."""
    from rollout import eval as rollout_eval

    def trickle(handler):
        handler.send_response(200)
        handler.send_header("content-type", "application/json")
        handler.end_headers()
        handler.wfile.write(b'{"choices": [{"message": {"content": "')
        while not server.stop.is_set():
            handler.wfile.write(b"a")
            handler.wfile.flush()
            time.sleep(0.1)

    with HostileServer(trickle) as server:
        argv = ["env=guess-number-v0", "engine=openai", f"url={server.url}", "model=m", "deadline_s=2"]
        assert rollout_eval.cli(argv + ["n=1", "max_turns=1", "baselines=false"]) == 1
    assert "no complete answer within 2 s" in capsys.readouterr().err


def test_rollout_eval_takes_the_reply_cap_as_a_key(capsys):
    from rollout import eval as rollout_eval

    def two_mb(handler):
        _reply(handler, 200, b'{"choices": [{"message": {"content": "' + b"x" * 2**21 + b'"}}]}')

    with HostileServer(two_mb) as server:
        argv = ["env=guess-number-v0", "engine=openai", f"url={server.url}", "model=m", "max_reply_mb=1"]
        assert rollout_eval.cli(argv + ["n=1", "max_turns=1", "baselines=false"]) == 1
    err = capsys.readouterr().err
    assert "1048576" in err or "1 MB" in err or "MiB" in err, err[-500:]


@pytest.mark.parametrize(
    "key",
    ["deadline_s=0", "deadline_s=-1", "deadline_s=inf", "deadline_s=nan", "deadline_s=1e9"]
    + ["max_reply_mb=0", "max_reply_mb=1e308", "max_reply_mb=nan", "max_reply_mb=4096"],
)
def test_rollout_eval_bounds_the_engine_limits(key, capsys):
    from rollout import eval as rollout_eval

    argv = ["env=guess-number-v0", "engine=openai", "url=http://127.0.0.1:9/v1", "model=m", key]
    assert rollout_eval.cli(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and key.split("=")[0] in err, err
