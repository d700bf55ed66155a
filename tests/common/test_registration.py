"""turngym.common.registration: the one `Registry` and `load_entry_point` every registry and loader uses."""

from __future__ import annotations

import subprocess
import sys
import warnings

import pytest

from turngym.common.registration import EntryPointError, EntrySpec, Registry, load_entry_point


def test_register_spec_list_make():
    reg: Registry[EntrySpec] = Registry("widget")
    reg.register("b-widget", "fractions:Fraction", description="a fraction", numerator=3)
    reg.register("a-widget", dict)
    assert reg.names == ["a-widget", "b-widget"] and list(reg) == reg.names and len(reg) == 2
    assert [s.name for s in reg.list()] == ["a-widget", "b-widget"]
    assert reg.spec("b-widget").description == "a fraction"
    assert reg.make("b-widget") == 3
    assert reg.make("b-widget", numerator=1, denominator=4) == 0.25
    assert reg.make("a-widget", x=1) == {"x": 1}
    assert "a-widget" in reg and "c-widget" not in reg


def test_unknown_name_names_the_closest_and_uses_the_registrys_error():
    class UnknownWidget(KeyError):
        pass

    reg: Registry[EntrySpec] = Registry("widget", unknown_error=UnknownWidget)
    reg.register("round-widget", dict)
    with pytest.raises(
        UnknownWidget, match="no widget registered as 'round-widgt'. Did you mean 'round-widget'"
    ):
        reg.spec("round-widgt")
    with pytest.raises(KeyError, match="Registered: round-widget"):
        reg.make("square")


def test_overwrite_warns_like_gymnasium_and_the_same_spec_again_does_not():
    reg: Registry[EntrySpec] = Registry("widget")
    reg.register("w", "fractions:Fraction")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        reg.register("w", "fractions:Fraction")  # a module reloaded: nothing changes
    with pytest.warns(UserWarning, match="Overriding widget 'w' already in the registry") as caught:
        reg.register("w", "decimal:Decimal")
    assert caught[0].filename == __file__  # points at the caller, not at the registry
    assert reg.make("w", value="1.5") == 1.5


def test_aliases_resolve_to_the_spec():
    reg: Registry[EntrySpec] = Registry("format", aliases={"qwen": "hermes"})
    reg.register("hermes", dict)
    assert reg.spec("qwen") is reg.spec("hermes") and "qwen" in reg


def test_load_entry_point_rules():
    assert load_entry_point("os.path:join") is __import__("os").path.join
    assert (
        load_entry_point("collections:OrderedDict.fromkeys") == __import__("collections").OrderedDict.fromkeys
    )
    assert load_entry_point(len) is len
    with pytest.raises(ModuleNotFoundError, match="no_such_module_xyz"):
        load_entry_point("no_such_module_xyz:thing")
    with pytest.raises(EntryPointError, match="module 'os' has no attribute 'nope'"):
        load_entry_point("os:nope")
    with pytest.raises(ImportError):  # EntryPointError is an ImportError: loaders report both alike
        load_entry_point("os:nope")
    for bad in ("os.path.join", "os:", ":join"):
        with pytest.raises(ValueError, match="module:attr"):
            load_entry_point(bad)
    with pytest.raises(TypeError):
        load_entry_point(42)  # type: ignore[arg-type]


def test_every_registry_is_one_registry():
    import envs.registry.registration
    import interactions.registry
    import tools.builtin
    import turngym.chat.calls.formats

    for reg in (
        envs.registry.registration._REGISTRY,
        interactions.registry._REGISTRY,
        tools.builtin.BUILTINS,
        turngym.chat.calls.formats._FORMATS,
    ):
        assert isinstance(reg, Registry)


def test_public_registry_functions_keep_working():
    import envs
    import interactions
    from tools import get_builtin, list_builtins
    from turngym.chat.calls import get_format, list_formats

    assert envs.spec("guess-number-v0").load() is envs.spec("guess-number-v0").load()
    assert interactions.make("answer-feedback").name == "answer-feedback"
    assert "calculator" in list_builtins() and get_builtin("calculator").name == "calculator"
    assert get_format("qwen").name == "hermes" and "llama3" in list_formats()
    with pytest.raises(KeyError, match="known formats: hermes, llama3, mistral"):
        get_format("nope")


def test_import_tools_is_light_and_the_tool_decorator_survives_its_submodule():
    code = (
        "import sys, tools, turngym.common.registration\n"
        "light = not {'pydantic', 'yaml'} & set(sys.modules)\n"
        "import tools.tool\n"
        "from tools import tool, Tool\n"
        "print(light, callable(tool) and not isinstance(tool, type(sys)), tools.tool is tool)\n"
        "print(tools.loading.load_tools is tools.load_tools, hasattr(tools, 'no_such_thing'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True", "True", "True", "True", "False"]
