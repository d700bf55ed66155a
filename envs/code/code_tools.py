"""The code env's tools: the built-in `python` tool with a run budget, and `submit` that grades."""

from __future__ import annotations

import pydantic

from tools.builtin.python import PythonTool
from tools.builtin.submit import Submit
from tools.result import ToolResult


class BudgetedPython(PythonTool):
    """The built-in `python` tool, counted against the episode's run budget (and penalised on failure)."""

    description = (
        "Run a Python 3 program in a fresh sandbox (no network, nothing kept between calls) and return its "
        "stdout and stderr. Use print() to see results. The number of runs per problem is limited."
    )
    concurrent = False  # each run reads and counts the episode's run budget: a reply's runs go in order

    def __init__(self, sandbox, run_timeout_s: float = 10.0):
        # The env owns the sandbox (local or SandboxFusion) so runs and grading share one backend.
        self.sandbox = sandbox
        self.timeout_s = run_timeout_s + 30.0

    async def run(self, args, context: dict | None) -> ToolResult:
        env = (context or {}).get("env")
        if env is not None:
            if env.runs_left <= 0:
                return ToolResult.error(
                    f"Error: all {env.max_runs} python runs are used up; call `submit` with your solution."
                )
            env.runs_used += 1
        result = await super().run(args, context)
        if env is not None:
            failed = result.metrics.get("sandbox_ok") == 0.0
            if failed and env.failed_run_penalty:
                result.reward = -env.failed_run_penalty
            result.content += f"\n[{env.runs_left} python run{'s' if env.runs_left != 1 else ''} left]"
        return result


class SubmitSolution(Submit):
    """The built-in `submit`, taking code: the env runs it against the hidden tests and ends the episode."""

    description = (
        "Submit your complete solution (the whole Python source). It is run against hidden tests and the "
        "episode ends, so test it with `python` first."
    )
    timeout_s = None  # grading time is bounded by the sandbox's own limits
    # Grading writes the step's info and ends the episode: a second submit of the same reply must not
    # run beside it (its discarded grading set `success` for the step; a two-submit hedge then "won").
    concurrent = False

    class Args(pydantic.BaseModel):
        model_config = pydantic.ConfigDict(extra="forbid")
        code: str = pydantic.Field(description="The complete Python source of your solution.")

    async def run(self, args: Args, context: dict | None) -> ToolResult:
        env = (context or {}).get("env")
        if env is None:
            return ToolResult.error("Error: `submit` only works inside a code env.")
        if not args.code.strip():
            return ToolResult.error("Error: the submitted code is empty; nothing was graded.")
        outcome = await env.agrade_submission(args.code)
        return outcome.tool_result(context, answer=args.code)
