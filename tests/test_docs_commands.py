"""Every command the README and docs/ show in a code block still runs as far as can be checked quickly.

The `python -m ...` and `make ...` lines of README.md's and docs/*.md's fenced code blocks (and the
`make` targets named anywhere in them) are read, and each is checked without training, loading a model
or starting Ray: the module exists and its `--help` exits 0 (a subcommand's too, e.g. `envs play
--help`); `trainer.run`'s overrides pass `trainer.compose.compose_config`, the config check `trainer.run`
makes before anything is written; `rollout.eval`'s keys pass its own parser and its env ids are
registered; a `make` target exists in the Makefile; a `python path.py` script exists. Arguments that are
placeholders (`<dir>`, `...`, `$VAR`) are left out of the checks. `make docs-check` runs this file; the
suite (and CI) collects it. `.venv/bin/python tests/test_docs_commands.py` lists the commands found.
"""

from __future__ import annotations

import functools
import importlib.util
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
OUR_PACKAGES = ("envs", "tools", "interactions", "rollout", "trainer", "turngym", "bench", "examples")
SHELL_BLOCKS = ("", "bash", "sh", "shell", "console")
PLACEHOLDER = re.compile(r"[<>{}$…]|\.\.\.")
# A value naming a file the page has the reader write (my_tools.yaml, my_rows/train.parquet).
USER_FILE = re.compile(r"\.(ya?ml|jsonl?|parquet|csv)$")
_FENCE = re.compile(r"^```([\w-]*)[^\n]*\n(.*?)^```", re.S | re.M)
_PREFIX = re.compile(r"^(?:\$\s+)?(?:[A-Z_][A-Z0-9_]*=\S*\s+)*(?:nice\s+(?:-n\s*)?-?\d+\s+)?")


@dataclass(frozen=True)
class DocCommand:
    """One command from a page: where it is, and its words after the program."""

    page: str
    line: int
    text: str
    program: str  # "module" (python -m), "script" (python file.py) or "make"
    target: str  # the module, the script's path or "" for make
    args: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.page}:{self.line}: {self.text}"


def _logical_lines(block: str, first_line: int) -> list[tuple[int, str]]:
    """A block's lines with backslash continuations joined, each with its line number in the page."""
    out, buffer, start = [], "", None
    for offset, raw in enumerate(block.split("\n")):
        if start is None:
            start = first_line + offset
        if raw.rstrip().endswith("\\"):
            buffer += raw.rstrip()[:-1] + " "
            continue
        out.append((start, buffer + raw))
        buffer, start = "", None
    return out


def _command(page: str, number: int, line: str) -> DocCommand | None:
    text = _PREFIX.sub("", line.strip())
    text = re.split(r"\s+#|\s*(?:&&|\|\||;|\|)\s*|\s+&\s*$", text)[0].strip()
    try:
        words = shlex.split(text)
    except ValueError:
        return None
    if not words:
        return None
    program = words[0].rsplit("/", 1)[-1]
    if program in ("python", "python3") and len(words) >= 3 and words[1] == "-m":
        return DocCommand(page, number, text, "module", words[2], tuple(words[3:]))
    if program in ("python", "python3") and len(words) >= 2 and words[1].endswith(".py"):
        return DocCommand(page, number, text, "script", words[1], tuple(words[2:]))
    if program == "make" and words[0] == "make":
        return DocCommand(page, number, text, "make", "", tuple(words[1:]))
    return None


@functools.cache
def documented_commands() -> tuple[DocCommand, ...]:
    """Every `python -m`, `python file.py` and `make` command in the pages' shell code blocks."""
    found = []
    for path in PAGES:
        text = path.read_text(encoding="utf-8")
        for block in _FENCE.finditer(text):
            if block.group(1) not in SHELL_BLOCKS:
                continue
            first = text.count("\n", 0, block.start(2)) + 1
            for number, line in _logical_lines(block.group(2), first):
                command = _command(path.relative_to(ROOT).as_posix(), number, line)
                if command is not None:
                    found.append(command)
    return tuple(found)


@functools.cache
def inline_make_targets() -> tuple[tuple[str, str], ...]:
    """(page, target) for every `make <target>` written in backticks in the pages' prose."""
    return tuple(
        (path.relative_to(ROOT).as_posix(), target)
        for path in PAGES
        for target in re.findall(r"`make ([a-z][\w-]*)[^`]*`", path.read_text(encoding="utf-8"))
    )


@functools.cache
def make_targets() -> frozenset[str]:
    """The targets the Makefile defines."""
    text = (ROOT / "Makefile").read_text()
    return frozenset(re.findall(r"^([A-Za-z][\w-]*)\s*:(?!=)", text, re.M))


def _concrete(args: tuple[str, ...]) -> list[str]:
    """The arguments that are not placeholders, nor a file of the reader's own (`tools=my_tools.yaml`)."""
    return [a for a in args if not PLACEHOLDER.search(a) and not _readers_file(a)]


def _readers_file(arg: str) -> bool:
    if "=" not in arg:
        return False  # `--save traj.jsonl`: a file the command writes
    value = arg.split("=", 1)[1]
    return bool(USER_FILE.search(value)) and not (ROOT / value).exists()


@functools.cache
def _help_exit(module: str, subcommand: str | None = None) -> tuple[int, str]:
    argv = [sys.executable, "-m", module, *([subcommand] if subcommand else []), "--help"]
    proc = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env=_environment(),
        stdin=subprocess.DEVNULL,
    )
    return proc.returncode, (proc.stderr or proc.stdout).strip()[-500:]


def _environment() -> dict[str, str]:
    import os

    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path}


def _check_module(command: DocCommand) -> None:
    module = command.target
    if module.split(".")[0] not in OUR_PACKAGES:
        return  # a library's own command (verl's, pip's): not ours to keep running
    assert importlib.util.find_spec(module) is not None, f"{command}: no module {module}"
    code, said = _help_exit(module)
    assert code == 0, f"{command}: `python -m {module} --help` exited {code}: {said}"
    args = _concrete(command.args)
    if module == "envs" and args and not args[0].startswith("-"):
        code, said = _help_exit(module, args[0])
        assert code == 0, f"{command}: `python -m envs {args[0]} --help` exited {code}: {said}"
        _check_env_ids(command, args[1:2] if args[0] in ("play", "check") else [])
    elif module == "trainer.run":
        _check_training_overrides(command, args)
    elif module == "rollout.eval":
        _check_eval_keys(command, args)


def _check_env_ids(command: DocCommand, ids: list[str]) -> None:
    import envs

    if "--import" in command.args:
        return  # registered by the user's own module
    for env_id in ids:
        try:
            envs.spec(env_id)
        except envs.UnknownEnvError as exc:
            pytest.fail(f"{command}: {exc}")


def _check_training_overrides(command: DocCommand, args: list[str]) -> None:
    from trainer.compose import compose_config
    from turngym.common.cli_errors import UsageError

    overrides = [a for a in args if "=" in a and not a.startswith("-")]
    if any(a.startswith("turngym.import_modules=") for a in overrides):
        return  # the user's modules register what the rest names
    try:
        compose_config(overrides)
    except UsageError as exc:
        pytest.fail(f"{command}: {exc}")


def _check_eval_keys(command: DocCommand, args: list[str]) -> None:
    from rollout.eval import parse_args
    from turngym.common.cli_errors import UsageError

    try:
        opts, _, _ = parse_args(args or ["--help"])
    except UsageError as exc:
        pytest.fail(f"{command}: {exc}")
    except SystemExit as exc:
        assert exc.code in (0, None), f"{command}: exited {exc.code}"
        return
    if "env" in opts and "import" not in opts:
        _check_env_ids(command, [opts["env"]])


def _id(command: DocCommand) -> str:
    return f"{command.page}:{command.line}"


@pytest.mark.parametrize("command", documented_commands(), ids=_id)
def test_a_documented_command_still_runs(command: DocCommand) -> None:
    if command.program == "make":
        for target in (a for a in command.args if not a.startswith("-") and "=" not in a):
            assert target in make_targets(), f"{command}: the Makefile has no target {target!r}"
    elif command.program == "script":
        assert (ROOT / command.target).is_file(), f"{command}: no file {command.target}"
    else:
        _check_module(command)


def test_every_make_target_the_prose_names_exists() -> None:
    missing = [
        f"{page}: make {target}" for page, target in inline_make_targets() if target not in make_targets()
    ]
    assert not missing, missing


def test_the_reader_finds_commands_where_the_pages_have_them() -> None:
    """The checks above only mean something if the reader finds the commands; a wrong one is caught."""
    commands = documented_commands()
    modules = {c.target for c in commands if c.program == "module"}
    assert {"trainer.run", "rollout.eval", "envs"} <= modules, modules
    assert any(c.program == "make" for c in commands)
    wrong = _command("x.md", 1, "RAY_ADDRESS=h:1 .venv/bin/python -m engines.serve --port 1  # old name")
    assert wrong == DocCommand(
        "x.md", 1, ".venv/bin/python -m engines.serve --port 1", "module", "engines.serve", ("--port", "1")
    )
    assert _help_exit("engines.serve")[0] != 0  # the old name no longer exists: its check fails
    with pytest.raises(pytest.fail.Exception, match="did you mean"):
        _check_training_overrides(wrong, ["env=guess-number", "actor_rollout_ref.actor.optim.lrr=1e-5"])


if __name__ == "__main__":
    for found in documented_commands():
        print(found)
