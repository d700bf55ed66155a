"""The chat templates of the embedded model, read from the `.jinja` files next to this module.

Both families write message content and a tool call's JSON the same way (`templates/macros.jinja`);
only the key that holds the arguments differs ("arguments" in hermes blocks, "parameters" in Llama 3),
so it is a macro parameter. Each family's file is appended to the macros to make one template string.
"""

from __future__ import annotations

from importlib.resources import files

FAMILIES = ("chatml", "llama3")


def _read(name: str) -> str:
    """The text of `templates/<name>.jinja`, stripped (works from an editable or a normal install)."""
    return files(__package__).joinpath("templates", f"{name}.jinja").read_text(encoding="utf-8").strip()


def load_chat_templates() -> dict[str, str]:
    """{family: full Jinja chat template} for every template family."""
    macros = _read("macros")
    return {family: macros + _read(family) for family in FAMILIES}


CHAT_TEMPLATES = load_chat_templates()
