"""ScriptedUser: a user with a hidden goal whose preferences the agent must find out by asking."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any

from interactions.interaction import Interaction, InteractionOutcome, InteractionReply
from turngym.chat.message import Message

_CHECKS = ("eq", "max", "min", "contains")


@dataclass
class Slot:
    """One hidden preference: its value, how the agent may ask for it, how it is said and checked."""

    name: str
    value: Any
    keywords: list[str]
    reveal: str = "My {name} is {value}."
    ask: str = ""
    check: str = "eq"
    field: str = ""
    revealed: bool = dataclasses.field(default=False, compare=False)

    def says(self) -> str:
        """The sentence that reveals this preference."""
        return self.reveal.format(name=self.name, value=self.value)

    def met_by(self, item: dict[str, Any]) -> bool:
        """Whether a chosen item satisfies this preference."""
        have = item.get(self.field or self.name)
        if have is None:
            return False
        if self.check == "max":
            return _num(have) is not None and _num(have) <= _num(self.value)
        if self.check == "min":
            return _num(have) is not None and _num(have) >= _num(self.value)
        if self.check == "contains":
            values = have if isinstance(have, list | tuple | set) else [have]
            return any(str(self.value).lower() == str(v).lower() for v in values)
        return str(have).lower() == str(self.value).lower()


def make_slot(name: str, spec: dict[str, Any]) -> Slot:
    """A Slot from its config mapping (`value`, `keywords`, `reveal`, `ask`, `check`, `field`)."""
    if not isinstance(spec, dict) or "value" not in spec:
        raise ValueError(f"slot {name!r}: expected a mapping with at least `value`, got {spec!r}")
    check = spec.get("check", "eq")
    if check not in _CHECKS:
        raise ValueError(f"slot {name!r}: check must be one of {_CHECKS}, got {check!r}")
    keywords = [str(k).lower() for k in spec.get("keywords") or [name.replace("_", " ")]]
    return Slot(
        name=name,
        value=spec["value"],
        keywords=keywords,
        reveal=spec.get("reveal", "My {name} is {value}."),
        ask=spec.get("ask") or f"What {keywords[0]} would you like?",
        check=check,
        field=spec.get("field", ""),
        revealed=bool(spec.get("known", False)),
    )


class ScriptedUser(Interaction):
    """Answers questions about its hidden preferences, one per matching keyword; scores what was found out.

    Config (or `episode_info["goal"]`/`["opening"]`/`["requirements"]` per episode): `opening` (first
    message), `goal` (name -> {value, keywords, reveal, ask, check, field, known}), `requirements`
    (field -> value the user said up front, e.g. `{"category": "laptop"}`). A preference is revealed when
    the agent's message contains one of its keywords. The env reports what the agent finally did through
    `finish(outcome)` with `outcome = {"item": {...}}` (e.g. the ordered product): the reward is
    `elicit_weight * fraction revealed + (1 - elicit_weight) * completion`, where completion is 1 when
    the item meets every preference and `partial_credit * fraction met` otherwise. An item that fails a
    requirement is not what the user asked for: it meets none of the preferences.
    """

    def __init__(
        self,
        *,
        opening: str = "Hi! Can you help me?",
        goal: dict[str, dict[str, Any]] | None = None,
        elicit_weight: float = 0.2,
        partial_credit: float = 0.5,
        idle_reply: str = "I'm not sure what you mean. Ask me about what I need, or go ahead when you are ready.",
        patience: int | None = None,
        requirements: dict[str, Any] | None = None,
    ):
        self.opening = opening
        self.goal_config = dict(goal or {})
        self.requirements_config = dict(requirements or {})
        self.requirements: dict[str, Any] = dict(self.requirements_config)
        self.elicit_weight = elicit_weight
        self.partial_credit = partial_credit
        self.idle_reply = idle_reply
        self.patience = patience
        self.slots: list[Slot] = []
        self.turns = 0

    def start(self, episode_info: dict[str, Any]) -> list[Message]:
        """Take the goal for this episode and say the opening line."""
        goal = episode_info.get("goal", self.goal_config)
        self.slots = [make_slot(name, s) for name, s in goal.items()]
        self.requirements = dict(episode_info.get("requirements", self.requirements_config) or {})
        self.turns = 0
        return [{"role": "user", "content": episode_info.get("opening", self.opening)}]

    def respond(self, messages: list[Message]) -> InteractionReply:
        """Reveal every preference the agent's last message asks about; otherwise nudge it on."""
        self.turns += 1
        text = _last_assistant_text(messages).lower()
        asked = [s for s in self.slots if any(_mentions(text, k) for k in s.keywords)]
        newly = [s for s in asked if not s.revealed]
        for s in asked:
            s.revealed = True
        reply = " ".join(s.says() for s in asked) if asked else self.idle_reply
        done = self.patience is not None and self.turns >= self.patience
        if done:
            reply += " I have to go now, thanks anyway."
        return InteractionReply(reply, 0.0, done, {"revealed": len(newly)})

    @property
    def elicited(self) -> float:
        """Fraction of hidden preferences the agent has found out."""
        return sum(s.revealed for s in self.slots) / len(self.slots) if self.slots else 1.0

    def finish(self, outcome: dict[str, Any] | None = None) -> InteractionOutcome:
        """Score what was found out and whether the chosen item meets the goal."""
        item = (outcome or {}).get("item")
        # A matching colour and price do not make a backpack the laptop the user asked for.
        wrong_item = isinstance(item, dict) and not all(
            str(item.get(k, "")).strip().lower() == str(v).strip().lower()
            for k, v in self.requirements.items()
        )
        fits = isinstance(item, dict) and not wrong_item
        met = [s.met_by(item) for s in self.slots] if fits else [False] * len(self.slots)
        met_fraction = sum(met) / len(met) if met else float(fits)
        all_met = fits and all(met)
        completion = 1.0 if all_met else self.partial_credit * met_fraction
        reward = self.elicit_weight * self.elicited + (1 - self.elicit_weight) * completion
        return InteractionOutcome(
            reward,
            {
                "success": all_met,
                "elicited": self.elicited,
                "goal_met": met_fraction,
                "completed": item is not None,
                "wrong_item": wrong_item,
            },
        )

    def revealed_goal(self) -> dict[str, Any]:
        """The preferences found out so far, as {name: value} (what a fair expert may use)."""
        return {s.name: s.value for s in self.slots if s.revealed}

    def expert_reply(self, messages: list[Message]) -> str:
        """Ask about the next preference not yet found out ("" once everything is known)."""
        pending = [s for s in self.slots if not s.revealed]
        return pending[0].ask if pending else ""


def _mentions(text: str, keyword: str) -> bool:
    return re.search(rf"(?<![a-z]){re.escape(keyword)}", text) is not None


def _num(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _last_assistant_text(messages: list[Message]) -> str:
    for m in reversed(messages):
        if m.get("role") == "assistant":
            content = m.get("content")
            return content if isinstance(content, str) else ""
    return ""
