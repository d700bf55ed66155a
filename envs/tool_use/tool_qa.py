"""ToolQAEnv: answer one question using registry tools; `submit` (or `Answer: ...`) is graded."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from envs.core.assistant_turn import AssistantTurn
from envs.core.number_bounds import check_env_numbers
from envs.core.step_result import StepResult
from envs.core.text_env import TextEnv
from turngym.chat.calls.formats import write_calls
from turngym.chat.message import system, user

if TYPE_CHECKING:
    from turngym.chat.calls.call import ToolCall

_MARKED = re.compile(r"(?:final\s+answer|answer)\s*[:=]\s*([^\n]+)", re.IGNORECASE)


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
    An answer must be one value: several numbers in it (`42 or 43`), or several different `Answer:` lines,
    are a format error (nothing paid, the episode goes on). `useful_call_reward` (default 0) is added for
    each successful helper-tool call not made before with the same arguments, at most `max_rewarded_calls`
    per episode; together at most `MAX_SHAPING` (a quarter of what solving pays), so it never outweighs
    the answer.
    """

    #: The most the optional tool-call shaping may add up to in one episode.
    MAX_SHAPING: float = 0.25

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
        check_env_numbers(
            type(self).__name__, useful_call_reward=useful_call_reward, max_rewarded_calls=max_rewarded_calls
        )
        if useful_call_reward < 0 or max_rewarded_calls < 0:
            raise ValueError("useful_call_reward and max_rewarded_calls must be >= 0")
        if useful_call_reward * max_rewarded_calls > self.MAX_SHAPING:
            # Shaping that approaches the answer's reward would pay a policy for calling tools, not solving.
            raise ValueError(
                f"tool-call shaping of up to {useful_call_reward} x {max_rewarded_calls} per episode exceeds "
                f"{self.MAX_SHAPING} (solving pays 1.0); lower useful_call_reward or max_rewarded_calls"
            )
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
        self._seen_calls: set[tuple[str, str]] = set()
        self.expert_step = 0
        opening = [system(self.system_prompt), user(self.question.text)]
        return opening, {"difficulty": difficulty, "kind": self.question.kind}

    def _grade(self, given: str) -> StepResult:
        from interactions.answer_feedback import AnswerFormatError

        try:
            right = any(self.is_correct(given, a) for a in (self.question.answer, *self.question.aliases))
        except AnswerFormatError as e:
            problem = f"the answer {given.strip()[:80]!r} is not one value: {e}"
            return StepResult(
                [user(f"Not graded: {problem}. Submit exactly one answer.")], info={"format_error": problem}
            )
        text = "Correct!" if right else f"Wrong: {given.strip()!r} is not the answer."
        return StepResult([user(text)], 1.0 if right else 0.0, terminated=True, info={"success": right})

    def _respond(self, turn: AssistantTurn) -> StepResult:
        # Markdown emphasis around the answer (`**42**`) is decoration, not part of it.
        found = [f.strip(" \t*`") for f in _MARKED.findall(turn.content) if f.strip(" \t*`")]
        problem = None
        if not found:
            problem = "no tool call and no `Answer: ...` in the reply"
        elif len({" ".join(f.lower().split()) for f in found}) > 1:
            # Several final answers would let a policy hedge and be paid for whichever is right.
            problem = f"the reply gives several final answers ({', '.join(repr(f[:40]) for f in found[:4])})"
        if problem:
            return StepResult(
                [user(f"Nothing was done ({problem}). {self.action_help}")], info={"format_error": problem}
            )
        return self._grade(found[-1])

    def after_tool_call(self, call: ToolCall, result, turn_info: dict) -> StepResult | None:
        """A `submit` call is graded and ends the episode; other calls are checked against the limits."""
        if call.name == "submit":
            return self._grade(result.answer or "") if result.terminate else None
        if (
            not result.is_error
            and self.useful_call_reward
            and call.name in self.tool_names
            and self.rewarded_calls < self.max_rewarded_calls
        ):
            # The same call again teaches nothing new; paying for it would make the shaping farmable.
            key = (call.name, _canonical(call.arguments))
            if key in self._seen_calls:
                return None
            self._seen_calls.add(key)
            self.rewarded_calls += 1
            return StepResult([], self.useful_call_reward)
        return None

    def expert_action(self) -> str:
        """The question's scripted tool calls, then `submit` with what the last tool said."""
        calls = self.question.expert_calls
        if self.expert_step < len(calls):
            name, args = calls[self.expert_step]
            self.expert_step += 1
            return write_calls([(name, args)], self.tool_call_format)
        return write_calls([("submit", {"answer": self.expert_answer()})], self.tool_call_format)

    def expert_answer(self) -> str:
        """The answer the expert submits (subclasses read it off the tool results)."""
        return self.question.answer


def numbers_match(given: str, expected: str) -> bool:
    """Whether `given` holds exactly the number `expected` (`1,234.5`, `$12`, `7/3`, `x = 7` all read).

    Exact: the questions have exact answers, so a rounded value is wrong. Several different numbers in
    `given` raise `interactions.answer_feedback.AnswerFormatError`.
    """
    from interactions.answer_feedback import read_number

    want = read_number(expected)
    got = read_number(given)
    return got is not None and want is not None and got == want


def _canonical(arguments: dict | str) -> str:
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return arguments
    return json.dumps(arguments, sort_keys=True)
