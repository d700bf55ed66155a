"""AnswerFeedback: checks a final answer, answers with graded hints, stops when right or out of tries."""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Any

from interactions.interaction import Interaction, InteractionOutcome, InteractionReply
from turngym.chat.message import Message

_MARKED = re.compile(r"(?:final\s+answer|answer)\s*(?:is)?\s*[:=]\s*([^\n]+)", re.IGNORECASE)
_BOXED = re.compile(r"\\boxed\{([^{}]*)\}")
_NUMBER = re.compile(r"-?\$?\d[\d,]*(?:\.\d+)?(?:\s*/\s*\d+)?")
# One written number: optional sign and `$`, ASCII digits (thousands commas only in groups of three),
# optional decimals, `/denominator` and `%`. Not inside a word (`x2`) or after a decimal point, and a
# `-` right after a digit is a dash between two numbers (`23-45`), not a sign.
_NUMBER_TOKEN = re.compile(
    r"(?<![\w.])[-\u2212]?\$?(?:[0-9]{1,3}(?:,[0-9]{3})+(?![0-9])|[0-9]+)(?:\.[0-9]+)?"
    r"(?:\s*/\s*[0-9]+)?%?"
)


class AnswerFormatError(ValueError):
    """An answer that is not one unambiguous value; the message tells the agent what to fix."""


def parse_number(text: str) -> float | None:
    """A number written as `1,234.5`, `$12`, `-3`, `3/4` or `75%`; None if the text is not one."""
    cleaned = text.strip().rstrip(".").replace(",", "").replace("$", "").strip()
    percent = cleaned.endswith("%")
    cleaned = cleaned.rstrip("%").strip()
    try:
        value = float(Fraction(cleaned.replace(" ", "")))
    except (ValueError, ZeroDivisionError, OverflowError):
        return None
    return value / 100 if percent else value


def read_number(text: str) -> Fraction | None:
    """The one number written in `text`, exactly (None if there is none).

    Words around it are allowed (`x = 7`, `68 apples`) and the same value written twice is one answer;
    several different numbers (`42 or 43`, `23 + 45 = 68`, a list) or digits other than 0-9 raise
    AnswerFormatError: a grader that picked one of several candidates could be gamed by hedging.
    """
    if any(not c.isascii() and (c.isdigit() or c.isnumeric()) for c in text):
        raise AnswerFormatError("write numbers with the digits 0-9")
    values: dict[Fraction, str] = {}
    for match in _NUMBER_TOKEN.finditer(text):
        written = match.group(0)
        value = _token_value(written)
        if value is None:
            raise AnswerFormatError(f"{written.strip()!r} is not a number")
        values.setdefault(value, written.strip())
    if len(values) > 1:
        shown = ", ".join(list(values.values())[:6]) + (", ..." if len(values) > 6 else "")
        raise AnswerFormatError(f"the answer holds several numbers ({shown}); give exactly one")
    return next(iter(values), None)


def _token_value(written: str) -> Fraction | None:
    cleaned = written.replace(",", "").replace("$", "").replace("\u2212", "-").replace(" ", "")
    percent = cleaned.endswith("%")
    try:
        value = Fraction(cleaned.rstrip("%"))
    except (ValueError, ZeroDivisionError):
        return None
    return value / 100 if percent else value


class AnswerFeedback(Interaction):
    """A teacher for one question: checks each final answer and hints after wrong ones.

    `episode_info`: `question`, `answer` (number or text), optional `hints` (most general first; the
    n-th wrong answer gets the n-th hint) and `solution` (used by the scripted expert). Answers are read
    from `Answer: ...` or `\\boxed{...}` (with `answer_format="last_number"`, the last number in the
    reply also counts). A reply with no readable answer, or with several different final answers or
    several numbers in a numeric answer (`Answer: 42 or 43`), is a format error and not an attempt.
    Exact answers (an int, or text such as `"5/6"`) must be matched exactly (`68.0`, `068`, `136/2` do;
    a rounded decimal does not); `tolerance` applies when the answer is a float. A right answer at
    attempt k earns `decay ** (k - 1)`; the episode stops when right or after `max_attempts`.
    """

    def __init__(
        self,
        *,
        max_attempts: int = 3,
        decay: float = 0.5,
        tolerance: float = 1e-6,
        answer_format: str = "marked",
        reveal_answer: bool = True,
        question: str | None = None,
        answer: Any = None,
        hints: list[str] | None = None,
        solution: str | None = None,
    ):
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, got {max_attempts}")
        if answer_format not in ("marked", "last_number"):
            raise ValueError(f"answer_format must be 'marked' or 'last_number', got {answer_format!r}")
        self.max_attempts = max_attempts
        self.decay = decay
        self.tolerance = tolerance
        self.answer_format = answer_format
        self.reveal_answer = reveal_answer
        self._default = {"question": question, "answer": answer, "hints": hints, "solution": solution}
        self._begin(self._default)

    def _begin(self, info: dict[str, Any]) -> None:
        self.question = info.get("question")
        self.answer = info.get("answer")
        self.hints = list(info.get("hints") or [])
        self.solution = info.get("solution") or ""
        self.attempts = 0
        self.solved = False
        self.finished = False

    def start(self, episode_info: dict[str, Any]) -> list[Message]:
        """Pose the question (from `episode_info`, else from the config)."""
        merged = {k: episode_info.get(k, v) for k, v in self._default.items()}
        if merged["question"] is None or merged["answer"] is None:
            raise ValueError("AnswerFeedback needs a `question` and an `answer` (episode info or config)")
        self._begin(merged)
        how = "`Answer: <your answer>`" if self.answer_format == "marked" else "a final number"
        return [
            {
                "role": "user",
                "content": f"{self.question}\n\nEnd your reply with {how}. "
                f"You have {self.max_attempts} attempt{'s' if self.max_attempts != 1 else ''}.",
            }
        ]

    def extract(self, text: str) -> str | None:
        """The final answer written in a reply, or None; AnswerFormatError if it gives different ones."""
        # Markdown emphasis around the answer (`**42**`) is decoration, not part of it.
        found = [
            f.strip(" \t*`") for f in [*_BOXED.findall(text), *(m.group(1) for m in _MARKED.finditer(text))]
        ]
        found = [f for f in found if f]
        if found:
            # Several different final answers would let a policy hedge and be paid for whichever is right.
            if len({_normal(f) for f in found}) > 1:
                shown = ", ".join(repr(f[:40]) for f in found[:4])
                raise AnswerFormatError(f"the reply gives several final answers ({shown}); give exactly one")
            return found[-1]
        if self.answer_format == "last_number":
            numbers = _NUMBER.findall(text)
            return numbers[-1] if numbers else None
        return None

    def is_correct(self, given: str) -> bool:
        """Exact numbers compare exactly, float answers within `tolerance`, text case-blind.

        Raises AnswerFormatError when a numeric answer holds several numbers (see `read_number`).
        """
        want = self._expected_number()
        if want is None:
            return _normal(given) == _normal(str(self.answer))
        got = read_number(given)
        if got is None:
            return False
        if isinstance(self.answer, float):
            return math.isclose(got, want, rel_tol=self.tolerance, abs_tol=self.tolerance)
        return got == want

    def _expected_number(self) -> Fraction | None:
        if isinstance(self.answer, bool):
            return None
        if isinstance(self.answer, int | float):
            return Fraction(self.answer)
        try:
            return (
                read_number(str(self.answer)) if _NUMBER_TOKEN.fullmatch(str(self.answer).strip()) else None
            )
        except AnswerFormatError:
            return None

    def respond(self, messages: list[Message]) -> InteractionReply:
        """Check the last assistant message's answer; hint, congratulate or close."""
        if self.finished:
            return InteractionReply("This question is closed.", done=True)
        text = _last_assistant_text(messages)
        how = "`Answer: <your answer>`" if self.answer_format == "marked" else "a number"
        try:
            given = self.extract(text)
            right = given is not None and self.is_correct(given)
        except AnswerFormatError as e:
            return InteractionReply(
                f"I could not grade your reply: {e}. Please end it with {how}, one value.",
                metrics={"format_error": True},
            )
        if given is None:
            return InteractionReply(
                f"I could not find a final answer in your reply. Please end it with {how}.",
                metrics={"format_error": True},
            )
        self.attempts += 1
        metrics: dict[str, Any] = {"attempts": self.attempts}
        if right:
            self.solved = self.finished = True
            reward = self.decay ** (self.attempts - 1)
            return InteractionReply(
                f"Correct! The answer is {given}.", reward, True, {**metrics, "success": True}
            )
        if self.attempts >= self.max_attempts:
            self.finished = True
            tail = f" The answer was {_show(self.answer)}." if self.reveal_answer else ""
            return InteractionReply(
                f"{given} is not right, and that was your last attempt.{tail}",
                0.0,
                True,
                {**metrics, "success": False},
            )
        left = self.max_attempts - self.attempts
        return InteractionReply(
            f"{given} is not right. {self.hint(given)} {left} attempt{'s' if left != 1 else ''} left.",
            metrics=metrics,
        )

    def hint(self, given: str) -> str:
        """The hint after the current wrong attempt: the next bundled one, else a direction."""
        parts = []
        if self.hints:
            parts.append(f"Hint: {self.hints[min(self.attempts, len(self.hints)) - 1]}")
        try:
            got = read_number(given)
        except AnswerFormatError:
            got = None
        want = self._expected_number()
        if got is not None and want is not None:
            parts.append("Your answer is too high." if got > want else "Your answer is too low.")
        return " ".join(parts) or "Check your work and try again."

    def finish(self, outcome: dict[str, Any] | None = None) -> InteractionOutcome:
        """Rewards were given per answer; report whether it was solved and in how many attempts."""
        self.finished = True
        return InteractionOutcome(0.0, {"success": self.solved, "attempts": self.attempts})

    def expert_reply(self, messages: list[Message]) -> str:
        """The worked solution followed by the right answer."""
        lead = f"{self.solution}\n" if self.solution else ""
        return f"{lead}Answer: {_show(self.answer)}"


def _last_assistant_text(messages: list[Message]) -> str:
    for m in reversed(messages):
        if m.get("role") == "assistant":
            content = m.get("content")
            return content if isinstance(content, str) else ""
    return ""


def _normal(text: str) -> str:
    return " ".join(text.strip().strip(".").lower().split())


def _show(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
