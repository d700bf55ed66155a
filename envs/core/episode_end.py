"""What an env answers to an action after its episode ended: nothing taken, nothing paid, the same end."""

from __future__ import annotations

from typing import Any

from turngym.chat.message import user


def refusal_after_end(terminated: bool, truncated: bool, turn: int | None = None):
    """The step result for an action after the episode ended: a message, reward 0, the same end flags."""
    how = "terminated" if terminated or not truncated else "was truncated"
    text = (
        f"The episode has ended (it {how}); this action was not taken and earns no reward. "
        "Call reset() to start a new episode."
    )
    info: dict[str, Any] = {"format_error": "action after the episode ended", "episode_ended": True}
    if turn is not None:
        info["turn"] = turn
    return [user(text)], 0.0, bool(terminated or not truncated), bool(truncated), info
