"""repo-fix-v0: a generated Python repository with a failing visible test; fix it with shell/read/edit, submit."""

from __future__ import annotations

import re
from typing import Any

from envs.code.submission_outcome import SubmissionOutcome
from envs.core.assistant_turn import AssistantTurn
from envs.core.number_bounds import check_env_numbers
from envs.core.step_result import StepResult
from envs.core.text_env import TextEnv
from envs.repo_fix.catalogue import template_source
from envs.repo_fix.generator import DIFFICULTIES, RepoTask, generate
from envs.repo_fix.repo_files import MAX_FILE_CHARS, RepoError, RepoFiles
from envs.repo_fix.repo_grader import REPO_DIR, grade_repository, sandbox_files
from turngym.chat.calls.formats import write_calls
from turngym.chat.message import system, user

_FAILED_TEST = re.compile(r"^FAIL (tests/\S+::\w+)$", re.MULTILINE)
TEST_COMMAND = "python3 run_tests.py"


class RepoFixEnv(TextEnv):
    """Fix a small generated Python repository so that its tests pass; hidden tests decide the reward.

    Each episode (seeded) builds a package of 1-7 modules (prices, carts, text, records, statistics,
    dates), visible tests in `tests/` with a plain-Python runner (`python3 run_tests.py`; no pytest), and
    injected bugs: `easy` one bug whose own function's visible test fails; `medium` one bug in a helper
    whose own test is not shown (a caller's test fails); `hard` two such bugs in different modules.

    Tools: `shell` (a bash command in the repository root, in a fresh `LocalSandbox` with a copy of the
    repository: `run_timeout_s`, `memory_mb`, output capped; changes to existing files are kept), `read`,
    `edit` (replace one exact occurrence, or write a whole file; paths checked as text, so nothing outside
    the repository can be named and the repository holds no links) and `submit`, which ends the episode.

    Reward: 1 when every hidden case passes, else 0 (`binary_reward=False` pays the fraction passed,
    which partial fixes can farm: for evaluation only). The hidden cases are calls of the package's
    functions on fresh inputs with expected values; they live only in this process. Grading copies the
    submitted repository into a fresh sandbox, where a runner (`python -I -S`) imports the package and
    calls each function; results come back as literals and are compared here, exactly and type-checked.
    So editing or deleting the visible tests, a conftest.py, sitecustomize.py, `sys.exit(0)`, patched
    builtins or a written report change nothing but the claimed results. The turn limit ends an
    unsubmitted episode with reward 0.
    """

    metadata = {"render_modes": ["ansi", "human"], "render_fps": 4}
    difficulties = DIFFICULTIES
    default_difficulty = "easy"
    reset_options = {"difficulty": tuple(DIFFICULTIES)}
    client_kwargs = ("difficulty",)  # the sandbox, its limits and the grading are the operator's
    action_help = (
        "Call `shell`, `read` or `edit` to work on the repository, and `submit` when the tests pass."
    )
    system_prompt = (
        "You are a software engineer fixing a bug in a small Python repository. Work with the tools: "
        "`shell` runs a command in the repository root, `read` shows files, `edit` changes them. Find why "
        f"the tests fail (`{TEST_COMMAND}`), fix the code (not the tests), then call `submit`: hidden tests "
        "check the package's functions."
    )

    def __init__(
        self,
        *,
        difficulty: str = "easy",
        binary_reward: bool = True,
        run_timeout_s: float = 10.0,
        grade_timeout_s: float = 25.0,  # under the per-turn tool time (30 s), so `submit` always ends
        per_call_timeout_s: float = 2.0,
        memory_mb: int = 512,
        max_output_chars: int = 6000,
        sandbox: Any = "local",
        isolation: str = "auto",
        tools=None,
        render_mode: str | None = None,
    ):
        check_env_numbers(
            type(self).__name__,
            run_timeout_s=run_timeout_s,
            grade_timeout_s=grade_timeout_s,
            per_call_timeout_s=per_call_timeout_s,
            memory_mb=memory_mb,
            max_output_chars=max_output_chars,
        )
        super().__init__(tools=tools, render_mode=render_mode)
        if difficulty not in DIFFICULTIES:
            raise ValueError(
                f"RepoFixEnv: difficulty must be one of {list(DIFFICULTIES)}, got {difficulty!r}"
            )
        if sandbox != "local" and not callable(getattr(sandbox, "arun", None)):
            raise ValueError("sandbox must be 'local' or an object with an async `arun` method")
        self.difficulty = difficulty
        self.binary_reward = binary_reward
        self.run_timeout_s = run_timeout_s
        self.grade_timeout_s = grade_timeout_s
        self.per_call_timeout_s = per_call_timeout_s
        self.memory_mb = memory_mb
        self.max_output_chars = max_output_chars
        self.isolation = isolation
        if sandbox == "local":
            from tools.sandbox import LocalSandbox

            # Built now, so a machine that cannot isolate fails at make() with the reason.
            sandbox = LocalSandbox(timeout_s=run_timeout_s, memory_mb=memory_mb, isolation=isolation)
        self.sandbox = sandbox
        self.task: RepoTask | None = None
        self.repo = RepoFiles({})
        self.last_test_output: str | None = None
        self.edited_since_tests = False
        self.shell_runs = 0

    def own_tools(self):
        """`shell`, `read`, `edit` and `submit`."""
        from envs.repo_fix.repo_tools import Edit, Read, Shell, SubmitRepo

        return [Shell(), Read(), Edit(), SubmitRepo()]

    # ----- episodes ------------------------------------------------------------------------------
    def _reset(self, options: dict[str, Any]):
        difficulty = options.get("difficulty", self.difficulty)
        self.task = generate(self.np_random, difficulty)
        self.repo = RepoFiles(self.task.files)
        self.last_test_output = None
        self.edited_since_tests = False
        self.shell_runs = 0
        prompt = (
            f"The repository below holds the package `{self.task.package}` and its tests; some tests fail. "
            f"Run them with `{TEST_COMMAND}`, find the bug in the package and fix it. Then call `submit`: "
            f"{len(self.task.hidden)} hidden tests of the package's functions decide the reward (changing the "
            f"visible tests does not help).\n\nFiles:\n{self.repo.listing()}"
        )
        return [system(self.system_prompt), user(prompt)], {
            "difficulty": difficulty,
            "package": self.task.package,
            "files": len(self.repo.files),
            "hidden_tests": len(self.task.hidden),
        }

    def _respond(self, turn: AssistantTurn) -> StepResult:
        problem = "no tool call in the reply"
        return StepResult(
            [user(f"Nothing was run ({problem}). {self.action_help}")], info={"format_error": problem}
        )

    # ----- tools' work ---------------------------------------------------------------------------
    async def run_shell(self, command: str):
        """Run `command` in a sandboxed copy of the repository; keep its changes to existing files."""
        from tools.result import ToolResult

        self.shell_runs += 1
        before = dict(self.repo.files)
        script = f"cd {REPO_DIR} || exit 99\n{command}\n"
        result = await self.sandbox.arun(
            script,
            "bash",
            files=sandbox_files(before),
            fetch_files=[f"{REPO_DIR}/{p}" for p in before],
            timeout_s=self.run_timeout_s,
        )
        text = result.to_text(max_chars=self.max_output_chars)
        if result.status == "sandbox_error":
            return ToolResult.error(f"{text}\n[the sandbox failed; nothing changed]")
        if result.status == "ok":
            text += "\n[exit code 0]"  # other endings are already said by the sandbox's message
        notes = self._take_back(before, result.files or {})
        if notes:
            text += "\n" + "\n".join(notes)
        if command.strip() == TEST_COMMAND:  # what the expert reads
            self.last_test_output = result.stdout
            self.edited_since_tests = False
        return ToolResult(text)

    def _take_back(self, before: dict[str, str], fetched: dict[str, bytes]) -> list[str]:
        notes = []
        for path, old in before.items():
            data = fetched.get(f"{REPO_DIR}/{path}")
            if data is None:  # removed, or now a link out of the repository or not a regular file
                notes.append(
                    f"[{path}: not a regular file in the repository any more; its old content stays]"
                )
                continue
            if len(data) > MAX_FILE_CHARS * 4:
                notes.append(f"[{path}: the new content is too large to keep; the old one stays]")
                continue
            try:
                new = data.decode("utf-8")
            except UnicodeDecodeError:
                notes.append(f"[{path}: the new content is not UTF-8 text; the old one stays]")
                continue
            if new == old:
                continue
            try:
                self.repo.write(path, new)
            except RepoError as exc:
                notes.append(f"[{path}: change not kept: {exc}]")
                continue
            self.edited_since_tests = True
            notes.append(f"[{path} was changed]")
        return notes

    async def agrade(self) -> SubmissionOutcome:
        """Grade the repository as it is now against the hidden cases."""
        assert self.task is not None
        report = await grade_repository(
            self.sandbox,
            self.task.package,
            dict(self.repo.files),
            self.task.hidden,
            per_call_s=self.per_call_timeout_s,
            timeout_s=self.grade_timeout_s,
        )
        return SubmissionOutcome.of(report, self.binary_reward, shell_runs=self.shell_runs)

    # ----- the scripted expert -------------------------------------------------------------------
    def expert_action(self) -> str:
        """Run the tests; fix the bugs behind the failing ones (known fixes); rerun; submit when green."""
        if self.task is None:
            raise RuntimeError("reset() first")
        if self.last_test_output is None or self.edited_since_tests:
            return write_calls([("shell", {"command": TEST_COMMAND})], self.tool_call_format)
        failing = _FAILED_TEST.findall(self.last_test_output)
        bugs = []
        for test_id in failing:
            for bug in self.task.catches.get(test_id, []):
                if bug not in bugs:
                    bugs.append(bug)
        edits = [e for e in (self._fix_of(bug) for bug in bugs) if e is not None]
        if not edits:
            return write_calls([("submit", {})], self.tool_call_format)
        return write_calls([("edit", e) for e in edits], self.tool_call_format)

    def _fix_of(self, bug) -> dict | None:
        """The edit that undoes `bug` (with enough context to be unique); None when already undone."""
        assert self.task is not None
        path = self.task.module_path(bug.module)
        original, fixed = self.task.files[path], self.task.fixed_files[path]
        current = self.repo.files.get(path)
        if current == fixed:
            return None
        if current != original:  # changed since the start: put the whole correct module back
            return {"path": path, "new": fixed}
        at = template_source(bug.module).index(bug.old)  # bugs sit in different modules
        start, end = at, at + len(bug.new)
        while original.count(original[start:end]) > 1:
            start = original.rfind("\n", 0, start - 1) + 1 if start > 0 else 0
            after = original.find("\n", end + 1)
            end = len(original) if after < 0 else after
        fixed_window = original[start:at] + bug.old + original[at + len(bug.new) : end]
        return {"path": path, "old": original[start:end], "new": fixed_window}
