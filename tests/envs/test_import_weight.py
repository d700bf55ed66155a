"""`import envs` and `import tools` stay light: no torch, verl, transformers or pandas."""

import subprocess
import sys

HEAVY = ["torch", "verl", "transformers", "pandas", "ray", "pydantic", "fastapi", "httpx", "websockets"]


def _modules_after(statement: str) -> set[str]:
    code = f"import sys; {statement}; print('\\n'.join(sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return set(out.split())


def test_import_envs_pulls_nothing_heavy():
    loaded = _modules_after("import envs")
    assert not [m for m in HEAVY if m in loaded]


def test_import_tools_pulls_no_ml_stack():
    loaded = _modules_after("import tools")
    assert not [m for m in ["torch", "verl", "transformers", "pandas", "ray", "fastapi"] if m in loaded]


def test_plain_text_episodes_touch_no_tool_machinery():
    # make + seeded reset + text replies, as verl's agent loop plays a game: no pydantic model, no tool
    # registry, no tool-call parser, no numpy generator (guess-number draws from quick_random). The
    # call-format registry is there (a reply is checked for its format's markers); its parsers are not.
    loaded = _modules_after(
        "import envs\n"
        "for seed in range(20):\n"
        "    env = envs.make('guess-number-v0'); env.reset(seed=seed); done = False\n"
        "    while not done: done = any(env.step(env.unwrapped.expert_action())[2:4])\n"
        "    assert env.unwrapped.env_tools._registry is None and env.unwrapped._generator is None\n"
        "del env"  # back at the top level, where `_modules_after` appends its print
    )
    parsers = [
        "turngym.chat.calls.hermes",
        "turngym.chat.calls.llama3",
        "turngym.chat.calls.mistral",
        "turngym.chat.calls.jsonscan",
    ]
    assert not [m for m in ["pydantic", "tools.registry", *parsers] if m in loaded]
    assert "turngym.chat.calls.formats" in loaded
