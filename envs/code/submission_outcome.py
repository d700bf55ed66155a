"""What grading a submission gives the episode: the agent's message, the reward and info."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tools.result import ToolResult

if TYPE_CHECKING:  # the grader (asyncio and all) loads only when a submission is graded
    from envs.code.grader import GradeReport


@dataclass
class SubmissionOutcome:
    """What grading a submission gives the episode: the message, the reward and info."""

    text: str
    reward: float
    info: dict[str, Any]

    @classmethod
    def of(cls, report: GradeReport, binary_reward: bool, **info: Any) -> SubmissionOutcome:
        """Reward 1 when every test passed, else 0 (`binary_reward=False`: the fraction passed)."""
        all_passed = report.total > 0 and report.passed == report.total
        reward = (1.0 if all_passed else 0.0) if binary_reward else report.fraction
        counts = {
            "success": all_passed,
            "tests_passed": report.passed,
            "tests_total": report.total,
            "pass_rate": report.fraction,
        }
        return cls(report.summary(), reward, {**counts, **info})

    def tool_result(self, context: dict | None, answer: str) -> ToolResult:
        """The `submit` tool's result, which ends the episode; the info goes into the step's info."""
        if context is not None and "info" in context:
            context["info"].update(self.info)
        return ToolResult(self.text, reward=self.reward, terminate=True, answer=answer)
