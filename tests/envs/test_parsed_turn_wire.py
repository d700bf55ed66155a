"""A parsed turn as an action (issue 35): `read_action` checks an `AssistantTurn` and never parses it again,
and over the wire it travels as an assistant message with `call_errors`, which a hostile client cannot
turn into a crash or a 500 (a real `python -m envs serve` on loopback)."""

from __future__ import annotations

import httpx
import pytest

import envs
from envs.core.assistant_turn import MAX_CALL_ERROR_CHARS, MAX_CALL_ERRORS, AssistantTurn, read_action
from envs.core.errors import InvalidAction
from envs.remote.wire import decode_action, encode_action
from turngym.chat.calls import ToolCall, write_calls
from turngym.serving.loopback_server import spawn_server, stop_server

GUESS = ToolCall("call_0", "guess", {"number": 50})
GUESS_TURN = AssistantTurn("", (GUESS,))


def _deep(levels: int):
    value: object = 1
    for _ in range(levels):
        value = [value]
    return value


@pytest.fixture(scope="module")
def server():
    url, proc = spawn_server(["-m", "envs", "serve"])
    yield url
    stop_server(proc)


# ----- read_action with an AssistantTurn ----------------------------------------------------------
def test_a_turn_is_used_as_parsed(parses):
    """Text holding a call's marker is the turn's text, not a call: the turn was parsed already."""
    marker_text = write_calls([("guess", {"number": 7})])
    turn = read_action(
        AssistantTurn("say\x00 " + marker_text, (GUESS,), ("block 2: bad\x1b[31m",)), max_chars=1000
    )
    assert parses == []
    assert turn.content == "say " + marker_text and turn.tool_calls == (GUESS,)
    assert turn.call_errors == ("block 2: bad[31m",)  # control characters dropped, as from the text


def test_the_whole_turn_shares_the_size_limit():
    content, errors = "x" * 40, ("e" * 30,)
    call = ToolCall("call_0", "guess", {"number": 50})  # 5 + 6 + 14 characters
    assert read_action(AssistantTurn(content, (call,), errors), max_chars=95).tool_calls == (call,)
    with pytest.raises(InvalidAction, match="over 94 characters .* by tool call 1 of 1"):
        read_action(AssistantTurn(content, (call,), errors), max_chars=94)
    with pytest.raises(InvalidAction, match="text and call_errors are 70 characters long; the limit is 69"):
        read_action(AssistantTurn(content, (), errors), max_chars=69)
    with pytest.raises(InvalidAction, match="the reply is 40 characters long; the limit is 39"):
        read_action(AssistantTurn(content), max_chars=39)
    # The same turn as a message dict counts the same characters.
    message = encode_action(AssistantTurn(content, (call,), errors))["action"]
    assert read_action(message, max_chars=95).tool_calls == (call,)
    with pytest.raises(InvalidAction, match="over 94 characters"):
        read_action(message, max_chars=94)


@pytest.mark.parametrize(
    ("turn", "problem"),
    [
        (AssistantTurn(5), "content must be a string, got int"),
        (AssistantTurn("", [GUESS]), None),  # a list of calls is read like a tuple
        (AssistantTurn("", {"call": GUESS}), "tool_calls must be a tuple of ToolCall, got dict"),
        (AssistantTurn("", (GUESS.to_openai(),)), "tool call 0 must be a ToolCall, got dict"),
        (AssistantTurn("", (ToolCall("c", None, {}),)), "tool call 0 has no function name"),
        (AssistantTurn("", (ToolCall(7, "guess", {}),)), "its id must be a string of 1 to 256"),
        (AssistantTurn("", (ToolCall("c" * 257, "guess", {}),)), "its id must be a string of 1 to 256"),
        (AssistantTurn("", (ToolCall("c", "guess", 5),)), "arguments must be an object or a JSON string"),
        (AssistantTurn("", (ToolCall("c", "guess", {"n": {1, 2}}),)), "arguments are not JSON"),
        (AssistantTurn("", (ToolCall("c", "guess", {"n": _deep(100)}),)), "nested deeper than the limit"),
        (AssistantTurn("", (ToolCall("c", "guess", "[" * 100),)), "arguments"),
        (AssistantTurn("", (), "one error"), "call_errors must be a list of strings, got str"),
        (AssistantTurn("", (), (b"bytes",)), r"call_errors\[0\] must be a string, got bytes"),
        (AssistantTurn("", (), ("e",) * (MAX_CALL_ERRORS + 1)), f"at most {MAX_CALL_ERRORS} per turn"),
        (AssistantTurn("", (), ("e" * (MAX_CALL_ERROR_CHARS + 1),)), f"the limit is {MAX_CALL_ERROR_CHARS}"),
    ],
)
def test_a_bad_turn_is_an_invalid_action_never_a_crash(turn, problem):
    if problem is None:
        assert read_action(turn, max_chars=1000).tool_calls == tuple(turn.tool_calls)
        return
    with pytest.raises(InvalidAction, match=problem):
        read_action(turn, max_chars=1000)


def test_a_text_env_steps_with_a_turn(parses):
    """TextEnv's step (its plain-text shortcut takes only str) reads a turn through `_read`."""
    env = envs.make("guess-number-v0")
    env.reset(seed=3)
    messages, _, _, _, info = env.step(AssistantTurn("", (GUESS,)))
    assert messages[0]["role"] == "tool" and messages[0]["tool_call_id"] == "call_0"
    assert info["format_error"] is None and info["tool_calls"] == 1
    messages, _, _, _, info = env.step(AssistantTurn("", (), ("tool call block 1: not JSON",)))
    assert (
        info["tool_errors"] == 1
        and "could not be read: tool call block 1: not JSON" in messages[-1]["content"]
    )
    messages, reward, terminated, _, info = env.step(AssistantTurn("x" * (env.max_action_chars + 1)))
    assert "characters long" in info["format_error"] and not terminated
    _, _, _, _, info = env.step(AssistantTurn("", ("not a call",)))
    assert info["format_error"] == "tool call 0 must be a ToolCall, got str"
    assert parses == []


# ----- the wire -----------------------------------------------------------------------------------
def test_a_turn_crosses_the_wire_as_the_same_turn(parses):
    turn = AssistantTurn("hm", (GUESS, ToolCall("call_1", "guess", "not an object")), ("block 3: bad",))
    body = encode_action(turn)
    assert body["action"]["call_errors"] == ["block 3: bad"]
    assert read_action(decode_action(body), max_chars=1000) == read_action(turn, max_chars=1000)
    # A message that says it was parsed (`call_errors`, even empty) is not read for calls again.
    text = write_calls([("guess", {"number": 7})])
    assert (
        read_action({"role": "assistant", "content": text, "call_errors": []}, max_chars=1000).tool_calls
        == ()
    )
    assert parses == []
    assert read_action({"role": "assistant", "content": text}, max_chars=1000).tool_calls[0].name == "guess"
    assert len(parses) == 1


def test_a_remote_env_answers_a_turn_as_the_local_one(server):
    local, remote = envs.make("guess-number-v0"), envs.make("guess-number-v0", remote=server)
    try:
        assert remote.reset(seed=3) == local.reset(seed=3)
        for turn in [
            AssistantTurn("", (GUESS,)),
            AssistantTurn("", (), ("tool call block 1: not JSON",)),
            AssistantTurn("plain text"),
            AssistantTurn("", (), ("e",) * (MAX_CALL_ERRORS + 1)),
            AssistantTurn("y" * local.max_action_chars, (), ("e",)),
        ]:
            assert remote.step(turn) == local.step(turn)
    finally:
        remote.close()


HOSTILE_ERRORS = [
    "not a list",
    {"a": "dict"},
    [1, 2, 3],
    [None],
    [["nested"]],
    [{"x": 1}],
    ["e"] * 100_000,
    ["x" * 1_000_000],
    ["x" * MAX_CALL_ERROR_CHARS] * MAX_CALL_ERRORS,  # each within its bounds, together over the turn's size
]


@pytest.mark.parametrize("errors", HOSTILE_ERRORS, ids=range(len(HOSTILE_ERRORS)))
def test_hostile_call_errors_get_a_format_error(server, errors):
    """Over raw HTTP: the step answers 200 with a format error, and the session plays on."""
    with httpx.Client(base_url=server, timeout=30) as client:
        session = client.post("/v1/sessions", json={"env_id": "guess-number-v0"}).json()["session_id"]
        try:
            assert client.post(f"/v1/sessions/{session}/reset", json={"seed": 3}).status_code == 200
            answer = client.post(
                f"/v1/sessions/{session}/step",
                json={"action": {"role": "assistant", "content": "", "call_errors": errors}},
            )
            assert answer.status_code == 200, answer.text
            info = answer.json()["info"]
            assert "call_errors" in info["format_error"] and not answer.json()["done"]
            after = client.post(
                f"/v1/sessions/{session}/step", json={"action": encode_action(GUESS_TURN)["action"]}
            )
            assert after.status_code == 200 and after.json()["info"]["format_error"] is None
        finally:
            client.delete(f"/v1/sessions/{session}")
        assert client.get("/health").status_code == 200


def test_a_bounded_call_errors_list_reaches_the_agent(server):
    remote = envs.make("guess-number-v0", remote=server)
    try:
        remote.reset(seed=3)
        errors = ["tool call block 1: not JSON\x07", "tool call block 2: no name"]
        messages, _, _, _, info = remote.step({"role": "assistant", "content": "", "call_errors": errors})
        assert info["format_error"] is None and info["tool_errors"] == 2
        assert messages[-1]["content"].endswith("not JSON; tool call block 2: no name")
    finally:
        remote.close()
