"""The hedge battery, over every registered env with an answer: a reply that offers the right answer
beside a wrong one pays nothing.

Round 5's red team tried 29 hedges (several submits, `A or B`, two wordle words in one reply, TextArena
`[move]` decoys) and none paid; this keeps it so for every env registered now or later. For each env the
scripted expert plays seed 0 until its paying move W (the last move with a positive reward); a wrong
answer L is the random player's move or the expert's paying move of another seed. A fresh env replays
the expert's moves before W, then gets one reply holding both L and W in each hedged form, once with W
first and once with W last. A policy that hedges does not know which of its candidates is right, so a
form pays when, both ways, it earns more than L alone earns in that state or reports success; one that
pays only one way ("the first submit counts") is the same as committing to that candidate, and gains
nothing. The per-env
batteries with each game's own hedges (`test_games_hacking.py`, `test_conversation_hacking.py`) stay
beside this one.
"""

from __future__ import annotations

import random
from functools import cache
from typing import Any

import pytest

import envs

# Envs without an answer one reply can hedge, and why (each must say; a new env is covered by default).
NO_ONE_REPLY_ANSWER = {
    "repo-fix-v0": "its answer is the edits made before `submit()`, which takes no arguments",
}
# TextArena games have no scripted expert, so their answer is unknown here; their decoy and steering
# agents are measured by bench/textarena_degenerate.py and tests/envs/test_textarena_opponents.py.
TEXTARENA = ("textarena-single-player", "textarena-two-player")

HEDGES = {
    "A or B": "{X} or {Y}",
    "two lines (several submits, two wordle words)": "{X}\n{Y}",
    "side by side": "{X} {Y}",
    "comma list": "{X}, {Y}",
    "textarena decoys": "[{X}] [{Y}]",
    "textarena decoys on lines": "[{X}]\n[{Y}]",
    "either or": "Either {X}\nor maybe\n{Y}",
}

ENV_IDS = [s.id for s in envs.list_envs() if s.category not in TEXTARENA]
SEED = 0


def _expert_moves(env_id: str, seed: int) -> tuple[list[Any], int] | None:
    """The expert's moves on `seed` and the index of its paying move (None if it never pays)."""
    env = envs.make(env_id)
    try:
        env.reset(seed=seed)
        moves: list[Any] = []
        paying = None
        for _ in range(100):
            move = env.unwrapped.expert_action()
            moves.append(move)
            _, reward, terminated, truncated, _ = env.step(move)
            if reward > 0:
                paying = len(moves) - 1
            if terminated or truncated:
                break
        return (moves, paying) if paying is not None else None
    finally:
        env.close()


@cache
def _answers(env_id: str) -> tuple[list[Any], str, str]:
    """(the expert's moves before its paying move, the paying move W, a wrong answer L)."""
    played = _expert_moves(env_id, SEED)
    assert played is not None, f"{env_id}: the expert never earns a reward on seed {SEED}"
    moves, paying = played
    right = moves[paying]
    assert isinstance(right, str), f"{env_id}: the expert's paying move is not text: {right!r:.80}"
    env = envs.make(env_id)
    env.reset(seed=SEED)
    candidates: list[Any] = []
    for k in range(5):
        try:
            candidates.append(env.unwrapped.random_action(random.Random(k)))
        except NotImplementedError:
            break
    env.close()
    for other in range(SEED + 1, SEED + 6):
        if len([c for c in candidates if isinstance(c, str) and c.strip() != right.strip()]) >= 1:
            break
        again = _expert_moves(env_id, other)
        if again is not None:
            candidates.append(again[0][again[1]])
    wrong = next((c for c in candidates if isinstance(c, str) and c.strip() != right.strip()), None)
    assert wrong is not None, f"{env_id}: no wrong answer found to hedge with"
    return moves[:paying], right, wrong


def test_every_registered_env_is_covered_or_says_why():
    assert set(NO_ONE_REPLY_ANSWER) <= set(ENV_IDS)
    assert {"guess-number-v0", "wordle-v0", "code-sandbox-v0", "calculator-qa-v0"} <= set(ENV_IDS)


def _reward_after(env_id: str, before: list[Any], reply: str) -> tuple[float, bool]:
    env = envs.make(env_id)
    try:
        env.reset(seed=SEED)
        for move in before:
            env.step(move)
        _, reward, _, _, info = env.step(reply)
    finally:
        env.close()
    return reward, bool(info.get("success"))


@pytest.mark.parametrize("hedge", list(HEDGES))
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_a_hedged_answer_pays_nothing(env_id: str, hedge: str):
    if env_id in NO_ONE_REPLY_ANSWER:
        pytest.skip(NO_ONE_REPLY_ANSWER[env_id])
    before, right, wrong = _answers(env_id)
    alone, _ = _reward_after(env_id, before, wrong)
    paid = {}
    for order, (x, y) in {"right first": (right, wrong), "right last": (wrong, right)}.items():
        reward, success = _reward_after(env_id, before, HEDGES[hedge].format(X=x, Y=y))
        paid[order] = (reward, success)
    gains = all(reward > alone or success for reward, success in paid.values())
    assert not gains, (
        f"{env_id}: the hedge {hedge!r} pays whichever candidate is right: {paid}, alone {alone}"
    )


@pytest.mark.parametrize("env_id", [e for e in ENV_IDS if e not in NO_ONE_REPLY_ANSWER])
def test_the_right_answer_alone_still_pays(env_id: str):
    """The battery's control: replayed to the same state, the paying move alone earns its reward."""
    before, right, _ = _answers(env_id)
    assert _reward_after(env_id, before, right)[0] > 0
