"""Tool-call formats: parse, render, round trip, malformed calls reported."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from turngym.chat.calls import ToolCall, format_tool_calls, get_format, list_formats, parse_tool_calls
from turngym.chat.calls.formats import guess_format, may_hold_calls, write_calls

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(10**12), 10**12)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,15}", fullmatch=True)
arguments = st.dictionaries(st.text(max_size=10), json_values, max_size=5)
markers = (
    "<tool_call>",
    "</tool_call>",
    "<|python_tag|>",
    "[TOOL_CALLS]",
    "<|eom_id|>",
    "<|eot_id|>",
    "</s>",
)
contents = (
    st.text(max_size=60)
    .map(str.strip)
    .filter(lambda s: not any(m in s for m in markers) and not s.startswith(("{", "[")))
)


@pytest.mark.parametrize("fmt", ["hermes", "llama3", "mistral"])
@settings(max_examples=150, deadline=None)
@given(calls=st.lists(st.tuples(names, arguments), max_size=4), content=contents)
def test_format_then_parse_round_trips(fmt, calls, content):
    tool_calls = [ToolCall(f"call_{k}", name, args) for k, (name, args) in enumerate(calls)]
    text = format_tool_calls(tool_calls, fmt, content=content)
    parsed = parse_tool_calls(text, fmt)
    assert parsed.errors == []
    assert parsed.tool_calls == tool_calls
    assert parsed.content == content


@pytest.mark.parametrize("fmt", ["hermes", "llama3", "mistral"])
@settings(max_examples=60, deadline=None)
@given(calls=st.lists(st.tuples(names, arguments), min_size=1, max_size=3), content=contents)
def test_a_text_without_the_registry_markers_holds_no_call(fmt, calls, content):
    # The markers the registry hands out are what envs test a reply for before parsing it: a rendered
    # call always holds one, and a text that holds none parses to no call.
    assert may_hold_calls(write_calls(calls, fmt), fmt)
    if not may_hold_calls(content, fmt):
        assert parse_tool_calls(content, fmt).tool_calls == []


def test_markers_guess_a_templates_format_and_write_an_experts_reply():
    assert guess_format("{% if tools %}<tool_call>{% endif %}") == "hermes"
    assert guess_format("{{- '<|python_tag|>' }}") == "llama3"
    assert guess_format("[TOOL_CALLS]") == "mistral"
    assert guess_format("{{ messages }}", default="llama3") == "llama3"
    hermes = get_format("qwen").markers
    assert (hermes.opens, hermes.close) == (("<tool_call>",), "</tool_call>")
    text = write_calls([("guess", {"number": 7})], "hermes")
    assert text == '<tool_call>\n{"name": "guess", "arguments": {"number": 7}}\n</tool_call>'
    assert write_calls([("guess", {"number": 7})], None) == text
    assert [
        c.name for c in parse_tool_calls(write_calls([("a", {}), ("b", {})], "mistral"), "mistral").tool_calls
    ] == [
        "a",
        "b",
    ]


def test_hermes_several_calls_lenient_whitespace_and_ids():
    text = 'Sure.\n<tool_call>{"name": "a", "arguments": {"x": 1}}</tool_call>\n\n<tool_call>\n  {"name":"b","arguments":{}}  \n</tool_call>'
    parsed = parse_tool_calls(text, "hermes", id_prefix="call_3_")
    assert parsed.content == "Sure."
    assert [(c.id, c.name, c.arguments) for c in parsed.tool_calls] == [
        ("call_3_0", "a", {"x": 1}),
        ("call_3_1", "b", {}),
    ]


def test_hermes_close_tag_inside_string_argument():
    text = '<tool_call>\n{"name": "echo", "arguments": {"s": "</tool_call> ok"}}\n</tool_call>'
    parsed = parse_tool_calls(text)
    assert parsed.tool_calls[0].arguments == {"s": "</tool_call> ok"}
    assert parsed.errors == []


def test_hermes_malformed_json_is_reported_not_executed():
    text = 'x <tool_call>\n{"name": "f", "arguments": {"a": 1,}}\n</tool_call>\n<tool_call>{"name": "g", "arguments": {}}</tool_call>'
    parsed = parse_tool_calls(text)
    assert [c.name for c in parsed.tool_calls] == ["g"]
    assert parsed.tool_calls[0].id == "call_0"
    assert len(parsed.errors) == 1
    assert "tool call block 1" in parsed.errors[0] and "invalid JSON" in parsed.errors[0]
    assert '"name": "f"' in parsed.errors[0]


def test_hermes_missing_name_and_unterminated_block():
    parsed = parse_tool_calls('<tool_call>{"arguments": {}}</tool_call><tool_call>{"name": "f", "argu')
    assert parsed.tool_calls == []
    assert 'missing "name"' in parsed.errors[0]
    assert "invalid JSON" in parsed.errors[1]


def test_hermes_trimmed_close_tag_still_parses():
    parsed = parse_tool_calls('<tool_call>\n{"name": "f", "arguments": {"a": 2}}\n')
    assert parsed.tool_calls == [ToolCall("call_0", "f", {"a": 2})]


def test_hermes_string_arguments_decoded_and_non_object_kept_raw():
    parsed = parse_tool_calls(
        '<tool_call>{"name": "f", "arguments": "{\\"a\\": 1}"}</tool_call><tool_call>{"name": "g", "arguments": [1]}</tool_call>'
    )
    assert parsed.tool_calls[0].arguments == {"a": 1}
    assert parsed.tool_calls[1].arguments == "[1]"


def test_llama3_python_tag_and_bare_json():
    tagged = parse_tool_calls(
        'Thinking<|python_tag|>{"name": "f", "parameters": {"q": "x"}}<|eom_id|>', "llama3"
    )
    assert tagged.content == "Thinking" and tagged.tool_calls == [ToolCall("call_0", "f", {"q": "x"})]
    bare = parse_tool_calls(
        '{"name": "f", "parameters": {}}; {"name": "g", "parameters": {"a": 1}}', "llama3"
    )
    assert [c.name for c in bare.tool_calls] == ["f", "g"] and bare.content == ""
    plain = parse_tool_calls("{just braces} in a sentence", "llama3")
    assert plain.tool_calls == [] and plain.errors == [] and plain.content == "{just braces} in a sentence"
    broken = parse_tool_calls('{"name": "f", "parameters": {"a": ', "llama3")
    assert broken.tool_calls == [] and "invalid JSON" in broken.errors[0]


def test_mistral_list_and_v11_and_errors():
    parsed = parse_tool_calls(
        '[TOOL_CALLS] [{"name": "f", "arguments": {"a": 1}, "id": "abc123XYZ"}]</s>', "mistral"
    )
    assert parsed.tool_calls == [ToolCall("abc123XYZ", "f", {"a": 1})]
    v11 = parse_tool_calls('[TOOL_CALLS]f[ARGS]{"a": 1}[TOOL_CALLS]g[ARGS]{}', "mistral")
    assert [(c.id, c.name) for c in v11.tool_calls] == [("call_0", "f"), ("call_1", "g")]
    bad = parse_tool_calls("[TOOL_CALLS] [{oops", "mistral")
    assert bad.tool_calls == [] and "invalid JSON" in bad.errors[0]


def test_registry_aliases_and_unknown_format():
    assert set(list_formats()) >= {"hermes", "llama3", "mistral"}
    assert get_format("qwen").name == "hermes"
    with pytest.raises(KeyError, match="known formats"):
        parse_tool_calls("x", "nope")


def test_openai_conversion():
    call = ToolCall.from_openai(
        {"id": "c9", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}
    )
    assert call == ToolCall("c9", "f", {"a": 1})
    assert call.to_openai()["function"] == {"name": "f", "arguments": {"a": 1}}
    assert call.arguments_json() == '{"a": 1}'


# ----- nesting depth: model text nested 1000 deep is a reported error, never a RecursionError ------------


def _wrap(fmt: str, args_text: str) -> str:
    if fmt == "hermes":
        return f'<tool_call>\n{{"name": "f", "arguments": {args_text}}}\n</tool_call>'
    if fmt == "llama3":
        return f'<|python_tag|>{{"name": "f", "parameters": {args_text}}}'
    return f'[TOOL_CALLS] [{{"name": "f", "arguments": {args_text}}}]'


@pytest.mark.parametrize("fmt", ["hermes", "llama3", "mistral"])
@pytest.mark.parametrize(
    "args_text",
    [
        "[" * 1000,
        "[" * 1000 + "]" * 1000,
        "[" * 100_000,
        '{"a": ' * 5000 + "1" + "}" * 5000,
        '{"x": "' + "[" * 5000 + '"}',  # brackets inside a string do not nest
    ],
)
def test_deep_nesting_is_reported_not_raised(fmt, args_text):
    parsed = parse_tool_calls(_wrap(fmt, args_text), fmt)
    if args_text.startswith('{"x"'):
        assert parsed.errors == [] and parsed.tool_calls[0].arguments == {"x": "[" * 5000}
    else:
        assert parsed.tool_calls == [] and len(parsed.errors) == 1
        assert "nested deeper than the limit of 64 levels" in parsed.errors[0]


@pytest.mark.parametrize("fmt", ["hermes", "llama3", "mistral"])
def test_nesting_up_to_the_limit_is_accepted(fmt):
    from turngym.chat.calls.bounded_json import MAX_JSON_DEPTH

    wrapper_levels = 2 if fmt == "mistral" else 1  # mistral's list plus the call object
    depth = MAX_JSON_DEPTH - wrapper_levels + 1
    value: list = []
    for _ in range(depth - 3):  # [] is one level, {"x": ...} another
        value = [value]
    parsed = parse_tool_calls(_wrap(fmt, json.dumps({"x": value})), fmt)
    assert parsed.errors == [] and parsed.tool_calls[0].name == "f"
    parsed = parse_tool_calls(_wrap(fmt, json.dumps({"x": [value]})), fmt)
    assert "limit of 64" in parsed.errors[0]


@pytest.mark.parametrize("fmt", ["hermes", "llama3", "mistral"])
def test_deep_json_inside_a_string_argument_is_reported(fmt):
    deep = "[" * 3000 + "]" * 3000
    parsed = parse_tool_calls(_wrap(fmt, json.dumps(deep)), fmt)
    assert (
        parsed.tool_calls == [] and "arguments of `f`: nested deeper than the limit of 64" in parsed.errors[0]
    )


def test_mistral_v11_deep_arguments_are_reported():
    parsed = parse_tool_calls("[TOOL_CALLS]f[ARGS]" + "{" * 10_000, "mistral")
    assert parsed.tool_calls == [] and "limit of 64" in parsed.errors[0]


def test_check_depth_skips_escaped_quotes_and_stops_at_the_value_end():
    from turngym.chat.calls.bounded_json import JSONTooDeep, check_depth

    check_depth('{"a": "\\"[[[[", "b": []}' + "[" * 1000)  # the value ends before the brackets
    with pytest.raises(JSONTooDeep) as err:
        check_depth("[" * 65)
    assert err.value.pos == 64 and isinstance(err.value, json.JSONDecodeError)
    check_depth("[" * 64 + "]" * 64)


def test_bounded_helpers_never_raise_on_deep_python_values():
    from turngym.chat.calls.bounded_json import depth_exceeds, loads
    from turngym.chat.calls.jsonscan import dump

    value: dict = {}
    for _ in range(100_000):
        value = {"a": value}
    assert depth_exceeds(value) and not depth_exceeds({"a": [1, {"b": 2}]})
    assert "too deeply" in dump(value)
    assert ToolCall("c", "f", value).arguments_json().startswith('"[value nested too deeply')
    assert "not JSON" in dump({"x": {1, 2}})
    with pytest.raises(json.JSONDecodeError):
        loads("[" * 100_000)
    call = ToolCall.from_openai({"function": {"name": "f", "arguments": "[" * 100_000}})
    assert call.arguments == "[" * 100_000  # kept raw: the tool reports it as not an object


# ----- one tool-call concept: envs read and record calls as turngym.chat.calls does -----------------------


@pytest.mark.parametrize("fmt", ["hermes", "llama3", "mistral"])
def test_env_and_rollout_record_the_same_call(fmt):
    """The env's transcript and the rollout's message hold a call exactly as `ToolCall.to_openai` writes it."""
    import envs
    from envs.core.assistant_turn import read_action

    calls = [ToolCall("call_0", "guess", {"number": 50})]
    text = format_tool_calls(calls, fmt)
    turn = read_action(text, max_chars=10_000, tool_call_format=fmt)
    assert all(type(c) is ToolCall for c in turn.tool_calls)
    assert turn.as_message()["tool_calls"] == [c.to_openai() for c in parse_tool_calls(text, fmt).tool_calls]
    # A rollout sends the parsed message (dict arguments); the env records it unchanged.
    env = envs.make("guess-number-v0", tool_call_format=fmt)
    env.reset(seed=0)
    message = {"role": "assistant", "content": "", "tool_calls": [c.to_openai() for c in calls]}
    env.step(message)
    assert env.unwrapped.transcript[2] == message


def test_json_string_arguments_stay_as_given():
    from envs.core.assistant_turn import read_action

    raw = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}
    turn = read_action({"role": "assistant", "content": "", "tool_calls": [raw]}, max_chars=1000)
    assert turn.tool_calls == (ToolCall("c1", "f", '{"a": 1}'),)
    assert turn.as_message()["tool_calls"] == [raw]
