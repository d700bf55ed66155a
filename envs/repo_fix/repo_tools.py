"""repo-fix-v0's tools: `shell` (a command in a sandboxed copy of the repository), `read`, `edit`, `submit`.

Each tool works on the env's `RepoFiles` (found in the call's context). `read` and `edit` never touch
a sandbox; `shell` copies the repository into a fresh sandbox, runs the command there and takes back
the new contents of the files that existed before (as text, never as links); `submit` grades.
"""

from __future__ import annotations

import pydantic

from envs.repo_fix.repo_files import RepoError
from tools.result import ToolResult
from tools.tool import Tool

MAX_READ_LINES = 400


def _env(context: dict | None):
    env = (context or {}).get("env")
    if env is None or not hasattr(env, "repo"):
        return None
    return env


_NO_ENV = "Error: this tool only works inside repo-fix-v0."


class Shell(Tool):
    """A bash command in the repository root, in a fresh sandbox with a copy of the repository."""

    name = "shell"
    description = (
        "Run a bash command in the repository root inside a sandbox (no network; `python3` is there, pytest "
        "is not; run the tests with `python3 run_tests.py`). Returns stdout, stderr and the exit code. "
        "Changes the command makes to the contents of existing files are kept; files it creates, removes "
        "or renames are not (use `edit`)."
    )
    timeout_s = None  # the sandbox's own wall-clock and CPU limits bound it

    class Args(pydantic.BaseModel):
        model_config = pydantic.ConfigDict(extra="forbid")
        command: str = pydantic.Field(
            description="The bash command, e.g. `python3 run_tests.py` or `grep -n def pkg/*.py`.",
            max_length=8000,
        )

    async def run(self, args: Args, context: dict | None) -> ToolResult:
        env = _env(context)
        if env is None:
            return ToolResult.error(_NO_ENV)
        if not args.command.strip():
            return ToolResult.error("Error: the command is empty.")
        return await env.run_shell(args.command)


class Read(Tool):
    """A file's lines (numbered), or the files under a directory."""

    name = "read"
    description = (
        "Show a file of the repository with line numbers (optionally only lines start..end), or list the "
        "files under a directory ('.' for all)."
    )

    class Args(pydantic.BaseModel):
        model_config = pydantic.ConfigDict(extra="forbid")
        path: str = pydantic.Field(".", description="A file or directory, relative to the repository root.")
        start: int | None = pydantic.Field(None, ge=1, description="First line to show (1-based).")
        end: int | None = pydantic.Field(None, ge=1, description="Last line to show.")

    async def run(self, args: Args, context: dict | None) -> ToolResult:
        env = _env(context)
        if env is None:
            return ToolResult.error(_NO_ENV)
        repo = env.repo
        where = args.path.strip().strip("/") if args.path.strip() not in ("", ".", "./") else ""
        try:
            if where == "" or where.rstrip("/") in repo.directories():
                return ToolResult(repo.listing(where.rstrip("/")))
            text = repo.read(where)
        except RepoError as exc:
            return ToolResult.error(f"Error: {exc}")
        lines = text.splitlines()
        first = (args.start or 1) - 1
        last = min(len(lines), args.end or len(lines), first + MAX_READ_LINES)
        shown = [f"{i + 1:>4} {lines[i]}" for i in range(first, last)]
        more = f"\n[{len(lines) - last} more lines; read with start={last + 1}]" if last < len(lines) else ""
        return ToolResult(("\n".join(shown) if shown else "(no lines in that range)") + more)


class Edit(Tool):
    """Replace one exact occurrence of a text in a file, or write a whole file."""

    name = "edit"
    description = (
        "Change a file of the repository. With `old`: replace its single exact occurrence by `new`. "
        "Without `old`: write `new` as the whole file (creating it if needed)."
    )

    class Args(pydantic.BaseModel):
        model_config = pydantic.ConfigDict(extra="forbid")
        path: str = pydantic.Field(description="The file, relative to the repository root (e.g. pkg/mod.py).")
        old: str | None = pydantic.Field(None, description="The exact text to replace (must occur once).")
        new: str = pydantic.Field(
            description="The replacement text, or the whole file when `old` is omitted."
        )

    async def run(self, args: Args, context: dict | None) -> ToolResult:
        env = _env(context)
        if env is None:
            return ToolResult.error(_NO_ENV)
        try:
            if args.old is None:
                path = env.repo.write(args.path, args.new)
                text = f"Wrote {path} ({len(args.new.splitlines())} lines)."
            else:
                path = env.repo.replace(args.path, args.old, args.new)
                text = f"Edited {path}: replaced 1 occurrence."
        except RepoError as exc:
            return ToolResult.error(f"Error: {exc}")
        env.edited_since_tests = True
        return ToolResult(text)


class SubmitRepo(Tool):
    """Ends the episode: the hidden tests run against the repository as it is."""

    name = "submit"
    description = (
        "Submit the repository as it is now. Hidden tests run against it and the episode ends, so run the "
        "visible tests first."
    )
    timeout_s = None  # grading time is bounded by the sandbox's own limits

    class Args(pydantic.BaseModel):
        model_config = pydantic.ConfigDict(extra="forbid")

    async def run(self, args: Args, context: dict | None) -> ToolResult:
        env = _env(context)
        if env is None:
            return ToolResult.error(_NO_ENV)
        outcome = await env.agrade()
        return outcome.tool_result(context, answer="submitted")
