"""The episode budgets training and `rollout.eval` start from when nothing sets them.

They live here, below the trainer, so that both read one copy: `trainer.compose` fills them into the
training config (at the keys in `TRAINING_KEYS`) and `rollout.eval` uses them when it has no run to
take budgets from.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


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
# turn limit, not the budget (tests/engines/test_embedded_model.py checks it); unused room costs
# nothing, verl's v1 trainer keeps responses unpadded. The easy games need at most 7 moves (wordle 8
# tries): more turns only buy more format errors. Expert moves are at most 5 tokens: a reply still
# going after 8 is cut (the env then answers it, nearly always with a format error) instead of running
# on until the budget is gone.
EMBEDDED_MODEL_BUDGETS = EpisodeBudgets(max_response_tokens=1152, max_turns=8, max_new_tokens=8)


# Named models' own (turngym/engines/named_models.py): training fills them in like the others, so that
# `rollout.eval model=<name>` compares with training. A model's trainer/config/model/<name>.yaml may set
# them too; tests/engines/test_named_models.py checks that the two agree. SmolLM2-135M-Instruct's guesses are 1-2 tokens:
# a reply cut at 4 (the number and a little of what follows) costs a turn instead of filling the episode.
NAMED_MODEL_BUDGETS = {
    "smollm2-135m-instruct": EpisodeBudgets(max_response_tokens=384, max_turns=6, max_new_tokens=4),
}


def default_budgets(embedded: bool, model: str | None = None) -> EpisodeBudgets:
    """The budgets training starts from for a model.

    Args:
        embedded: whether the model is the embedded tiny model (no model given).
        model: the model as named on the command line; a named model may have budgets of its own.

    Returns:
        The embedded model's budgets, a named model's own, or the general ones.
    """
    if embedded:
        return EMBEDDED_MODEL_BUDGETS
    return NAMED_MODEL_BUDGETS.get(str(model), DEFAULT_BUDGETS)


def run_turn_limit(config: Any) -> int:
    """A run's assistant-turn limit, read from its training config: the one source of it.

    The limit is ``actor_rollout_ref.rollout.multi_turn.max_assistant_turns`` (`TRAINING_KEYS`), which
    `trainer.compose` fills from `default_budgets` when nothing sets it. The agent loop caps every
    episode at it, and the step dumps and the learning table's trivial players play under it. An env's
    own limit (its spec's ``max_turns``) is a rule of its game: an episode of it ends there when that
    comes first, and `trainer.run` says so before training (`trainer.compose.turn_limit_notes`).

    Args:
        config: the whole training config (a DictConfig or nested mappings).

    Returns:
        The limit; when the key is null (set so on purpose), the rollout's own default
        (`rollout.episode.EpisodeConfig.max_turns`).

    >>> run_turn_limit({"actor_rollout_ref": {"rollout": {"multi_turn": {"max_assistant_turns": 5}}}})
    5
    """
    node = config
    for part in TRAINING_KEYS["max_turns"].split("."):
        node = node.get(part) if node is not None else None
    if node is None:
        from rollout.episode import EpisodeConfig

        return EpisodeConfig.max_turns
    return int(node)
