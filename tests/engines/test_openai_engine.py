"""OpenAIEngine against a real OpenAI-compatible chat-completions server on loopback (stdlib http.server,
scripted answers): rollout.eval, a tool call returned as `tool_calls`, an opponent and a simulated user."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import envs
from turngym.engines.engine import EngineRequestError
from turngym.engines.openai_engine import TEXT_ONLY_NOTE, OpenAIEngine


class ChatServer:
    """`POST /v1/chat/completions` answering `answer(request_body) -> message dict`; requests are kept."""

    def __init__(self, answer: Callable[[dict], dict], finish_reason: str = "stop"):
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                server.requests.append(body)
                server.headers.append(dict(self.headers))
                if self.path != "/v1/chat/completions":
                    self.send_response(404)
                    self.end_headers()
                    return
                reply = {
                    "id": f"chatcmpl-{len(server.requests)}",
                    "object": "chat.completion",
                    "model": body["model"],
                    "choices": [{"index": 0, "message": answer(body), "finish_reason": finish_reason}],
                    "usage": {"prompt_tokens": 11, "completion_tokens": 2, "total_tokens": 13},
                }
                data = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> ChatServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def say(text: str) -> Callable[[dict], dict]:
    return lambda body: {"role": "assistant", "content": text}


def test_rollout_eval_with_engine_openai_plays_every_episode(capsys):
    from rollout import eval as rollout_eval

    with ChatServer(say("50")) as server:
        argv = ["env=guess-number-v0", "engine=openai", f"url={server.url}", "model=scripted-model"]
        argv += ["n=2", "max_turns=3", "baselines=false", "temperature=0"]
        assert rollout_eval.cli(argv) == 0
    out = capsys.readouterr().out
    assert TEXT_ONLY_NOTE in out
    assert len(server.requests) == 6  # 2 episodes x 3 turns, "50" every time
    first, last = server.requests[0], server.requests[-1]
    assert first["model"] == "scripted-model" and first["temperature"] == 0
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    assert "number guessing game" in first["messages"][0]["content"]
    # Later turns carry the conversation: the model's "50" and the env's answer to it.
    assert [m["content"] for m in last["messages"][2:4]][0] == "50"
    assert last["messages"][3]["role"] == "user" and "50" in last["messages"][3]["content"]


def test_tool_calls_returned_by_the_server_reach_the_env(tokenizer):
    from rollout.episode import EpisodeConfig, run_episode

    def guess(body):
        call = {
            "id": "call_7",
            "type": "function",
            "function": {"name": "guess", "arguments": '{"number": 50}'},
        }
        return {"role": "assistant", "content": None, "tool_calls": [call]}

    env = envs.make("guess-number-v0", action_tool=True)
    with ChatServer(guess, finish_reason="tool_calls") as server:
        engine = OpenAIEngine(server.url, "m", tokenizer, api_key="sk-test")
        traj = asyncio.run(
            run_episode(env, engine, tokenizer, seed=1, config=EpisodeConfig(max_turns=2, max_new_tokens=64))
        )
    assert not traj.failed, traj.error
    assert server.headers[0]["authorization"] == "Bearer sk-test"
    assert server.requests[0]["tools"][0]["function"]["name"] == "guess"
    calls = [m for m in traj.messages if m["role"] == "assistant"]
    assert calls[0]["tool_calls"][0]["function"] == {"name": "guess", "arguments": {"number": 50}}
    # The env answered the call as a tool result, and the next request sent it back with the call's id.
    second = server.requests[1]["messages"]
    call_id = second[-2]["tool_calls"][0]["id"]
    assert second[-2]["tool_calls"][0]["function"]["arguments"] == '{"number": 50}'
    assert second[-1]["role"] == "tool" and second[-1]["tool_call_id"] == call_id
    assert ("too" in second[-1]["content"].lower()) or "correct" in second[-1]["content"].lower()
    # What this engine can give: text re-encoded locally, no logprobs.
    assert all(lp == 0.0 for lp in traj.logprobs)


def test_an_opponent_and_a_simulated_user_play_through_it(tokenizer):
    from interactions.llm_user import LLMUser
    from rollout.engine_opponent import EngineOpponent

    with ChatServer(say("[4]")) as server:
        engine = OpenAIEngine(server.url, "opponent-model", tokenizer)
        opponent = EngineOpponent(engine, tokenizer, max_new_tokens=4)
        assert (
            opponent(
                [{"role": "system", "content": "Play tic-tac-toe."}, {"role": "user", "content": "Move?"}]
            )
            == "[4]"
        )
        assert server.requests[-1]["messages"][-1] == {"role": "user", "content": "Move?"}
        assert server.requests[-1]["max_tokens"] == 4
    with ChatServer(say("I want a refund.")) as server:
        user = LLMUser(
            engine=OpenAIEngine(server.url, "user-model", tokenizer),
            tokenizer=tokenizer,
            persona="a customer",
        )
        reply = asyncio.run(user.arespond([{"role": "assistant", "content": "How can I help?"}]))
    assert reply.content == "I want a refund."
    # The simulated user's prompt swaps roles: the agent's turn is the user model's "user".
    assert server.requests[0]["messages"][-1] == {"role": "user", "content": "How can I help?"}


def test_a_caller_that_passes_only_ids_is_told_what_is_missing(tokenizer):
    engine = OpenAIEngine("http://127.0.0.1:9/v1", "m", tokenizer)
    with pytest.raises(EngineRequestError, match="given only token ids"):
        asyncio.run(engine.generate("r", prompt_ids=[1, 2], sampling_params={}))
