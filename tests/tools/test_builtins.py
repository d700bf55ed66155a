"""Built-in tools: calculator, search, submit, python (local and via the /run_code server)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tools import get_builtin, list_builtins
from tools.builtin.calculator import evaluate


def test_list_and_unknown_builtin():
    assert list_builtins() == ["calculator", "python", "python_session", "search", "submit"]
    with pytest.raises(KeyError, match="built-ins: calculator"):
        get_builtin("nope")


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("1/3 + 1/6", "0.5"),
        ("0.1 + 0.2", "0.3"),
        ("2**100", "1267650600228229401496703205376"),
        ("2^10 - 1", "1023"),
        ("(2**10 - 1) / 3", "341"),
        ("1/3", "1/3 (≈ 0.333333333333)"),
        ("-7 // 2", "-4"),
        ("7 % 3", "1"),
        ("sqrt(16/9)", "4/3 (≈ 1.33333333333)"),
        ("factorial(20)", "2432902008176640000"),
        ("gcd(12, 18) + lcm(4, 6)", "18"),
        ("4^0.5", "2"),
        ("2^0.5", "≈ 1.4142135623731"),
        ("max(1, 2.5, -3)", "2.5"),
    ],
)
def test_calculator_exact(expression, expected):
    assert get_builtin("calculator").call_sync({"expression": expression}).content == expected


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("1/0", "division by zero"),
        ("9**9**9", "result too large"),
        ("__import__('os').system('true')", "unsupported syntax"),
        ("__import__('os')", "unknown function `__import__`"),
        ("x + 1", "unknown name `x`"),
        ("(1", "cannot parse expression"),
        ("[1, 2]", "unsupported syntax"),
        ("'a' * 3", "unsupported syntax"),
        ("factorial(2.5)", "factorial needs an integer"),
    ],
)
def test_calculator_errors(expression, message):
    res = get_builtin("calculator").call_sync({"expression": expression})
    assert res.is_error and message in res.content


def test_calculator_has_no_eval_path():
    import tools.builtin.calculator as calc

    source = Path(calc.__file__).read_text()
    assert "eval(" not in source.replace("_eval(", "").replace("evaluate(", "").replace('mode="eval"', "")
    assert evaluate("2*3") == 6


def test_search_bundled_corpus():
    search = get_builtin("search")
    assert len(search.index.docs) >= 40
    top = search.call_sync({"query": "capital of Australia", "k": 1}).content
    assert top.startswith("[1] Canberra:")
    res = search.call_sync({"query": "who invented the telephone"})
    assert "Alexander Graham Bell" in res.content.splitlines()[0]
    assert search.call_sync({"query": "zzzqqq"}).content == "No documents match 'zzzqqq'."
    assert search.call_sync({"query": "x", "k": 50}).is_error


def test_search_user_corpus(tmp_path):
    path = tmp_path / "docs.jsonl"
    path.write_text(
        '{"id": "a", "title": "Kettle", "text": "A kettle boils water."}\n{"title": "Toaster", "text": "A toaster browns bread."}\n'
    )
    search = get_builtin("search", corpus=str(path))
    assert search.call_sync({"query": "bread", "k": 1}).content == "[1] Toaster: A toaster browns bread."
    txt = tmp_path / "lines.txt"
    txt.write_text("red apples\ngreen pears\n")
    assert get_builtin("search", corpus=str(txt)).call_sync({"query": "pears"}).content == "[1] green pears"


def test_submit_terminates():
    res = get_builtin("submit").call_sync({"answer": "42"})
    assert res.terminate and res.answer == "42" and not res.is_error


def test_python_tool_local():
    py = get_builtin("python")
    res = py.call_sync({"code": "print(sum(range(10)))"})
    assert res.content == "45" and res.metrics["sandbox_ok"] == 1.0
    err = py.call_sync({"code": "raise ValueError('no')"})
    assert "ValueError: no" in err.content and "[exited with code 1]" in err.content
    assert (
        py.call_sync({"cod": "x"}).content
        == "tool `python`: missing required argument `code`; unexpected argument `cod`"
    )


def test_python_session_tool_lifecycle():
    base = get_builtin("python_session")
    episode = base.fork()
    assert episode.call_sync({"code": "x = 5"}).content == "(no output)"
    assert episode.call_sync({"code": "x * 2"}).content == "10"
    other = base.fork()
    assert "NameError" in other.call_sync({"code": "x"}).content
    asyncio.run(episode.aclose())
    asyncio.run(episode.aclose())
    asyncio.run(other.aclose())


@pytest.mark.slow
def test_python_tool_through_fusion_server(sandbox_server):
    py = get_builtin("python", backend="fusion", endpoint=sandbox_server)
    assert py.call_sync({"code": "print(6 * 7)"}).content == "42"
