"""ToolQAEnv: answer one question using registry tools; `submit` (or `Answer: ...`) is graded."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from envs.assistant_turn import AssistantTurn, ToolCallRequest
from envs.messages import system, user
from envs.step_result import StepResult
from envs.text_env import TextEnv

_MARKED = re.compile(r"(?:final\s+answer|answer)\s*[:=]\s*\**\s*([^\n*]+)", re.IGNORECASE)


@dataclass
class Question:
    """A question, its answer, and what the scripted expert does: tool calls, then the answer."""

    text: str
    answer: str
    expert_calls: list[tuple[str, dict[str, Any]]]
    kind: str = ""
    aliases: tuple[str, ...] = ()  # other accepted ways to write the answer (e.g. "nine" for "9")


class ToolQAEnv(TextEnv):
    """Subclasses set `tool_names` (registry built-ins) and implement `make_question`.

    The agent answers with `submit(answer)` or a reply ending in `Answer: ...`; a right answer scores 1.
    `useful_call_reward` (default 0) is added for each successful call to a helper tool, at most
    `max_rewarded_calls` per episode: a small shaping signal that never outweighs the answer.
    """

    tool_names: tuple[str, ...] = ()
    system_prompt = "Answer the question. Use your tools; when you know the answer, call `submit` with it."
    action_help = "Call a tool, or give your final answer with `submit` or as `Answer: <answer>`."

    def __init__(
        self,
        *,
        difficulty: str | None = None,
        useful_call_reward: float = 0.0,
        max_rewarded_calls: int = 2,
        tools=None,
        render_mode: str | None = None,
    ):
        super().__init__(tools=tools, render_mode=render_mode)
        self.difficulty = self._check_difficulty(difficulty or self.difficulties[0])
        self.useful_call_reward = useful_call_reward
        self.max_rewarded_calls = max_rewarded_calls
        self.question: Question | None = None

    # ----- what subclasses implement -------------------------------------------------------------
    difficulties: tuple[str, ...] = ("easy", "medium", "hard")  # the first is the default

    def make_question(self, difficulty: str, options: dict[str, Any]) -> Question:
        """A question drawn with `self.np_random`."""
        raise NotImplementedError

    def is_correct(self, given: str, expected: str) -> bool:
        """Whether the submitted answer matches."""
        raise NotImplementedError

    # ----- plumbing ------------------------------------------------------------------------------
    def _check_difficulty(self, difficulty: str) -> str:
        if difficulty not in self.difficulties:
            raise ValueError(
                f"{type(self).__name__}: unknown difficulty {difficulty!r}; choose from {list(self.difficulties)}"
            )
        return difficulty

    def own_tools(self):
        """The registry tools named in `tool_names`, then `submit`."""
        from tools.builtin import get_builtin

        return [get_builtin(name) for name in (*self.tool_names, "submit")]

    def _reset(self, options: dict[str, Any]):
        difficulty = self._check_difficulty(options.pop("difficulty", self.difficulty))
        self.question = self.make_question(difficulty, options)
        self.rewarded_calls = 0
        self.expert_step = 0
        opening = [system(self.system_prompt), user(self.question.text)]
        return opening, {"difficulty": difficulty, "kind": self.question.kind}

    def _grade(self, given: str) -> StepResult:
        right = any(self.is_correct(given, a) for a in (self.question.answer, *self.question.aliases))
        text = "Correct!" if right else f"Wrong: {given.strip()!r} is not the answer."
        return StepResult([user(text)], 1.0 if right else 0.0, terminated=True, info={"success": right})

    def _respond(self, turn: AssistantTurn) -> StepResult:
        found = _MARKED.findall(turn.content)
        if not found or not found[-1].strip():
            problem = "no tool call and no `Answer: ...` in the reply"
            return StepResult(
                [user(f"Nothing was done ({problem}). {self.action_help}")], info={"format_error": problem}
            )
        return self._grade(found[-1])

    def _after_tool_call(self, call: ToolCallRequest, result, turn_info: dict) -> StepResult | None:
        if call.name == "submit":
            return self._grade(result.answer or "") if result.terminate else None
        if (
            not result.is_error
            and self.useful_call_reward
            and call.name in self.tool_names
            and self.rewarded_calls < self.max_rewarded_calls
        ):
            self.rewarded_calls += 1
            return StepResult([], self.useful_call_reward)
        return None

    def expert_action(self) -> str:
        """The question's scripted tool calls, then `submit` with what the last tool said."""
        calls = self.question.expert_calls
        if self.expert_step < len(calls):
            name, args = calls[self.expert_step]
            self.expert_step += 1
            return _call(name, args)
        return _call("submit", {"answer": self.expert_answer()})

    def expert_answer(self) -> str:
        """The answer the expert submits (subclasses read it off the tool results)."""
        return self.question.answer


def _call(name: str, arguments: dict[str, Any]) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


def numbers_match(given: str, expected: str, rel_tol: float = 1e-9) -> bool:
    """Numbers written either way (`1,234.5`, `$12`, `7/3`) compare within a relative tolerance."""
    from interactions.answer_feedback import parse_number

    want = parse_number(expected)
    got = parse_number(given.split("(")[0]) if given.strip() else None
    if got is None:
        number = re.search(r"-?[\d,]*\.?\d+(?:/\d+)?", given)
        got = parse_number(number.group(0)) if number else None
    return got is not None and want is not None and math.isclose(got, want, rel_tol=rel_tol, abs_tol=1e-9)
