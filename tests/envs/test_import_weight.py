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
