"""code-sandbox-v0: solve a programming problem, test code with `python`, submit against hidden tests."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from envs.code.cases import parse_case
from envs.code.problems import CodeProblem, bundled_problems, load_problems
from envs.code.submission_outcome import SubmissionOutcome
from envs.core.assistant_turn import AssistantTurn
from envs.core.number_bounds import check_env_numbers
from envs.core.step_result import StepResult
from envs.core.text_env import TextEnv
from turngym.chat.calls.formats import write_calls
from turngym.chat.message import system, user

_CODE_BLOCK = re.compile(r"```(?:python|py|python3)?[ \t]*\n(.*?)```", re.DOTALL)


class CodeSandboxEnv(TextEnv):
    """A problem with visible examples; `python` runs code (at most `max_runs` times), `submit` ends it.

    The reward is 1 when every hidden test passes, else 0. `binary_reward=False` pays the fraction passed
    instead, which also pays trivial answers (a constant `False` passes 7 of 9 `valid_ipv4` tests), so
    a policy can farm it; use it for evaluation, not as a training reward.
    The submission runs on the hidden tests' inputs in its own sandboxed process; its results come back
    as plain data and are compared with the expected values in this process (`envs.code.grader`), so
    nothing the submission does inside the sandbox can forge a pass. `failed_run_penalty` is subtracted for each `python`
    run that fails. Hidden tests never appear in the conversation: the agent learns only how many
    passed and the kinds of failure. A reply without tool calls whose text holds a ```python block is
    taken as a submission too (`submit_code_blocks=False` turns this off).

    Problems: the bundled set (65 problems in tiers easy/medium/hard; `tier=` restricts it) or a JSONL
    file of your own (`problems="path.jsonl"`, lines with `prompt`, `tests`, optional `reference`).
    Sandbox: `LocalSandbox` by default, which refuses to start where it cannot isolate (no bubblewrap,
    no user namespaces, no seccomp); `isolation="none"` opts in to running model code unisolated (the
    code can then read the hidden tests on disk: never for training on untrusted output).
    `sandbox="fusion"` with `sandbox_endpoint=` uses a SandboxFusion server; any object with `arun(code, language, **kw)` also works.
    `reset(options={"problem_id": ...})` or `{"index": i}` picks a problem; `{"tier": ...}` a tier.
    """

    metadata = {"render_modes": ["ansi", "human"], "render_fps": 4}
    action_help = "Call `python` to test code or `submit` with your complete solution."
    reset_options = {"problem_id": str, "index": int, "tier": str}
    # Which problems and how replies are read; the sandbox, its limits and the grading are the operator's.
    client_kwargs = ("tier", "submit_code_blocks")
    system_prompt = (
        "You are an expert Python programmer. Solve the problem. You may test code with the `python` tool; "
        "when you are confident, call `submit` with your complete solution."
    )

    def __init__(
        self,
        *,
        problems: str | Path | list[CodeProblem] | None = None,
        tier: str | None = None,
        max_runs: int = 8,
        binary_reward: bool = True,
        failed_run_penalty: float = 0.0,
        per_test_timeout_s: float = 4.0,
        run_timeout_s: float = 10.0,
        memory_mb: int = 512,
        sandbox: Any = "local",
        sandbox_endpoint: str | None = None,
        isolation: str = "auto",
        submit_code_blocks: bool = True,
        tools=None,
        render_mode: str | None = None,
    ):
        check_env_numbers(
            type(self).__name__,
            max_runs=max_runs,
            failed_run_penalty=failed_run_penalty,
            per_test_timeout_s=per_test_timeout_s,
            run_timeout_s=run_timeout_s,
            memory_mb=memory_mb,
        )
        super().__init__(tools=tools, render_mode=render_mode)
        if isinstance(problems, str | Path):
            problems = load_problems(problems)
        self.problems: list[CodeProblem] = (
            list(problems) if problems is not None else list(bundled_problems())
        )
        if tier is not None and tier not in {p.tier for p in self.problems}:
            raise ValueError(
                f"CodeSandboxEnv: no problems of tier {tier!r}; tiers here: {sorted({p.tier for p in self.problems})}"
            )
        if failed_run_penalty < 0:
            raise ValueError(f"failed_run_penalty must be >= 0 (it is subtracted), got {failed_run_penalty}")
        self.tier = tier
        self.max_runs = max_runs
        self.binary_reward = binary_reward
        self.failed_run_penalty = failed_run_penalty
        self.per_test_timeout_s = per_test_timeout_s
        self.run_timeout_s = run_timeout_s
        self.memory_mb = memory_mb
        self.submit_code_blocks = submit_code_blocks
        self._sandbox_arg, self._sandbox_endpoint = sandbox, sandbox_endpoint
        self._sandbox: Any = None
        if sandbox not in ("local", "fusion") and not callable(getattr(sandbox, "arun", None)):
            raise ValueError("sandbox must be 'local', 'fusion' or an object with an async `arun` method")
        if sandbox == "fusion" and not sandbox_endpoint:
            raise ValueError("sandbox='fusion' needs sandbox_endpoint='http://host:port'")
        self.isolation = isolation
        if sandbox == "local":
            # Built now, so a machine that cannot isolate fails at make() with the reason, not mid-episode.
            _ = self.sandbox
        self.problem: CodeProblem | None = None
        self.runs_used = 0

    # ----- sandbox and tools ---------------------------------------------------------------------
    @property
    def sandbox(self) -> Any:
        """The sandbox that runs `python` calls and grades submissions (built on first use)."""
        if self._sandbox is None:
            if isinstance(self._sandbox_arg, str):
                from tools.sandbox.backend import make_sandbox

                self._sandbox = make_sandbox(
                    self._sandbox_arg,
                    endpoint=self._sandbox_endpoint,
                    timeout_s=self.run_timeout_s,
                    memory_mb=self.memory_mb,
                    isolation=self.isolation,
                )
            else:
                self._sandbox = self._sandbox_arg
        return self._sandbox

    def own_tools(self):
        """`python` (budgeted) and `submit`."""
        from envs.code.code_tools import BudgetedPython, SubmitSolution

        return [BudgetedPython(_LazySandbox(self), self.run_timeout_s), SubmitSolution()]

    @property
    def runs_left(self) -> int:
        """`python` runs left in this episode."""
        return max(0, self.max_runs - self.runs_used)

    # ----- episodes ------------------------------------------------------------------------------
    def _pick(self, options: dict[str, Any]) -> CodeProblem:
        if "problem_id" in options:
            wanted = options.pop("problem_id")
            for p in self.problems:
                if p.id == wanted:
                    return p
            raise ValueError(f"CodeSandboxEnv: no problem with id {wanted!r}")
        if "index" in options:
            return self.problems[int(options.pop("index")) % len(self.problems)]
        tier = options.pop("tier", self.tier)
        pool = [p for p in self.problems if tier is None or p.tier == tier]
        if not pool:
            raise ValueError(f"CodeSandboxEnv: no problems of tier {tier!r}")
        return pool[int(self.np_random.integers(len(pool)))]

    def _reset(self, options: dict[str, Any]):
        self.problem = self._pick(options)
        self.runs_used = 0
        return [system(self.system_prompt), user(self.render_problem(self.problem))], {
            "problem_id": self.problem.id,
            "tier": self.problem.tier,
            "max_runs": self.max_runs,
            "hidden_tests": len(self.problem.tests),
        }

    def render_problem(self, problem: CodeProblem) -> str:
        """The opening message: statement, visible examples and how to work (never the hidden tests)."""
        parts = [problem.prompt.strip()]
        if problem.examples:
            shown = []
            for ex in problem.examples:
                if isinstance(ex, dict) and "output" in ex:
                    shown.append(f"Input:\n{ex['input'].rstrip()}\nOutput:\n{ex['output'].rstrip()}")
                elif isinstance(ex, dict):
                    case = parse_case(ex, problem.entry_point, problem.id)
                    call = ", ".join([*map(repr, case.args), *(f"{k}={v!r}" for k, v in case.kwargs.items())])
                    shown.append(f"assert {case.entry_point}({call}) == {case.expected!r}")
                else:
                    shown.append(ex)
            parts.append(
                "Examples:\n" + "\n".join(shown)
                if not problem.is_program
                else "Examples:\n\n" + "\n\n".join(shown)
            )
        parts.append(
            f"You may run code with the `python` tool (up to {self.max_runs} runs). When you are done, call "
            f"`submit` with your complete solution; it is run against {len(problem.tests)} hidden tests."
        )
        return "\n\n".join(parts)

    async def _respond(self, turn: AssistantTurn) -> StepResult:
        code = self._code_in(turn.content)
        if code is None:
            return self._nudge()
        return self._as_step(await self.agrade_submission(code))

    def _code_in(self, text: str) -> str | None:
        if not self.submit_code_blocks:
            return None
        blocks = [b for b in _CODE_BLOCK.findall(text) if b.strip()]
        return blocks[-1] if blocks else None

    def _nudge(self) -> StepResult:
        problem = "no tool call and no ```python code block in the reply"
        return StepResult(
            [user(f"Nothing was run or submitted ({problem}). {self.action_help}")],
            info={"format_error": problem},
        )

    @staticmethod
    def _as_step(outcome: SubmissionOutcome) -> StepResult:
        return StepResult([user(outcome.text)], outcome.reward, terminated=True, info=dict(outcome.info))

    async def agrade_submission(self, code: str) -> SubmissionOutcome:
        """Run `code` against the hidden tests; the outcome's reward follows the env's options."""
        from envs.code.grader import grade

        report = await grade(self.sandbox, self.problem, code, per_test_s=self.per_test_timeout_s)
        return SubmissionOutcome.of(report, self.binary_reward, python_runs=self.runs_used)

    def expert_action(self) -> str:
        """Submit the reference solution."""
        if self.problem is None or self.problem.reference is None:
            raise NotImplementedError(
                "this problem has no reference solution, so there is no scripted expert"
            )
        return write_calls([("submit", {"code": self.problem.reference})], self.tool_call_format)


class _LazySandbox:
    """Defers building the env's sandbox until the first `python` call."""

    def __init__(self, env: CodeSandboxEnv):
        self._env = env

    async def arun(self, code: str, language: str = "python", **kwargs: Any):
        return await self._env.sandbox.arun(code, language, **kwargs)
