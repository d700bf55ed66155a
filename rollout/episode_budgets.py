"""The episode budgets training and `rollout.eval` start from when nothing sets them.

They live here, below the trainer, so that both read one copy: `trainer.compose` fills them into the
training config (at the keys in `TRAINING_KEYS`) and `rollout.eval` uses them when it has no run to
take budgets from.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EpisodeBudgets:
    """How long an episode may run: tokens after the prompt, assistant turns, tokens in one turn."""

    max_response_tokens: int
    max_turns: int
    max_new_tokens: int | None  # None: the rest of max_response_tokens


# Where each budget sits in a training config (verl's keys, and turngym's for one turn).
TRAINING_KEYS = {
    "max_response_tokens": "data.max_response_length",
    "max_turns": "actor_rollout_ref.rollout.multi_turn.max_assistant_turns",
    "max_new_tokens": "turngym.max_tokens_per_turn",
}

DEFAULT_BUDGETS = EpisodeBudgets(max_response_tokens=512, max_turns=16, max_new_tokens=None)

# The embedded tiny model's (no model given), tuned with trainer/config/embedded_model.yaml for
# `make train`. 1152 tokens hold max_turns turns of max_new_tokens tokens each plus the env's answers
# (a format error up to ~100 tokens of this tokenizer, a maze board ~125), so an episode ends by its
# turn limit, not the budget (tests/trainer/test_embedded_model.py checks it); unused room costs
# nothing, verl's v1 trainer keeps responses unpadded. The easy games need at most 7 moves (wordle 8
# tries): more turns only buy more format errors. Expert moves are at most 5 tokens: a reply still
# going after 8 is cut (the env then answers it, nearly always with a format error) instead of running
# on until the budget is gone.
EMBEDDED_MODEL_BUDGETS = EpisodeBudgets(max_response_tokens=1152, max_turns=8, max_new_tokens=8)


def default_budgets(embedded: bool) -> EpisodeBudgets:
    """The budgets training starts from: the embedded model's when no model is given, else the general ones."""
    return EMBEDDED_MODEL_BUDGETS if embedded else DEFAULT_BUDGETS
