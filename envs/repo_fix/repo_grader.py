"""Grading a submitted repository against hidden test cases, with nothing the repository can reach deciding
the score.

One sandboxed run of the code env's function runner (`envs/code/function_runner.py`) imports the
submitted package from a fresh copy of the repository and calls each hidden case's function on its
inputs; results come back as Python literals on a private stdout. This process decodes them with bounded `ast.literal_eval` and compares them with the expected
values (`same_value`: exact, types included), which never enter the sandbox. The visible tests, any
conftest.py, sitecustomize or report file in the repository play no part: the runner starts Python
with `-I -S` and reads nothing but its own stdin, and only its report lines are read back.
"""

from __future__ import annotations

from typing import Any

from envs.code.grader import GradeReport, grade_calls
from envs.repo_fix.generator import HiddenCase

REPO_DIR = "repo"  # where the repository sits inside the sandbox's work dir (the runner is main.py beside it)


def sandbox_files(files: dict[str, str]) -> dict[str, str]:
    """The repository's files as the sandbox's input files (under REPO_DIR)."""
    return {f"{REPO_DIR}/{path}": text for path, text in files.items()}


async def grade_repository(
    sandbox: Any,
    package: str,
    files: dict[str, str],
    cases: list[HiddenCase],
    *,
    per_call_s: float = 2.0,
    timeout_s: float = 60.0,
) -> GradeReport:
    """Run the hidden cases' calls against `files` in one sandboxed run and score what comes back."""
    config = {
        "root": REPO_DIR,
        "package": package,
        "limit_s": per_call_s,
        "calls": [(c.module, c.function, c.args, {}) for c in cases],
    }
    return await grade_calls(  # `cases` duck-typed: only `.expected` is read
        sandbox,
        config,
        sandbox_files(files),
        cases,
        timeout_s=timeout_s,
        ended_early="the test run ended before every case ran",
    )
