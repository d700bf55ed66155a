"""Size and check, before Ray starts, `data.max_prompt_length` against every episode's opening prompt.

An episode whose opening (rendered with the env's tool schemas by the model's chat template) is
longer than the prompt budget comes back from the rollout with no trainable token; when a whole
batch is like that verl's rollout-correction step stops the run ("response_mask must contain at
least one valid token"). Measuring the dataset's prompts here turns that into an error that names
the env, the seed and the budget needed, in seconds and before any worker starts. With
`data.max_prompt_length=auto` (the default) the budget is the longest prompt rounded up to a multiple
of `PROMPT_LENGTH_MULTIPLE`: on CPU, where verl pads every prompt to the budget, a budget sized for
the longest tool-env prompt would make a text-game step several times more expensive.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rollout.episode_kind import EpisodeKind
from rollout.episode_row import EpisodeRow
from rollout.opening_prompt import OpeningPrompt, opening_prompt
from trainer.compose import ConfigError

AUTO = "auto"
PROMPT_LENGTH_MULTIPLE = 64


def longest_prompts(
    rows: Iterable[dict[str, Any]], tokenizer: Any, chat_template_kwargs: dict[str, Any] | None = None
) -> dict[str, tuple[int, int]]:
    """For each env id in `rows`: (token count, seed) of its longest opening prompt, tools included."""
    tools_of: dict[EpisodeKind, list[dict]] = {}
    last: dict[EpisodeKind, OpeningPrompt] = {}
    longest: dict[str, tuple[int, int]] = {}
    for row in rows:
        episode = EpisodeRow.from_row(row)
        n_tokens = len(
            row_opening_prompt(episode, tokenizer, chat_template_kwargs, tools_of, last).prompt_ids
        )
        if n_tokens > longest.get(episode.env_id, (-1, 0))[0]:
            longest[episode.env_id] = (n_tokens, int(episode.seed or 0))
    return longest


def row_opening_prompt(
    episode: EpisodeRow,
    tokenizer: Any,
    chat_template_kwargs: dict[str, Any] | None = None,
    tools_of: dict[EpisodeKind, list[dict]] | None = None,
    last: dict[EpisodeKind, OpeningPrompt] | None = None,
) -> OpeningPrompt:
    """The opening prompt the rollout builds for a dataset row.

    Args:
        episode: the row, as an `EpisodeRow`; its stored ``prompt`` is the env's opening for its seed.
        tokenizer: the policy's tokenizer.
        chat_template_kwargs: the template arguments the rollout renders with.
        tools_of: tool schemas by kind of episode, filled here (one env made per kind).
        last: the last opening by kind of episode, filled here (its ChatFormat is reused).

    Returns:
        What `rollout.opening_prompt.opening_prompt` returns for the row's messages and its env's tools.
    """
    tools_of = {} if tools_of is None else tools_of
    last = {} if last is None else last
    key = episode.kind
    if key not in tools_of:
        # Tool schemas depend on the env and its kwargs, not on the seed.
        env = key.make()
        try:
            tools_of[key] = list(env.tool_schemas)
        finally:
            env.close()
    messages = [{"role": m["role"], "content": m["content"]} for m in episode.prompt]
    previous = last.get(key)
    last[key] = opening_prompt(
        tokenizer,
        messages,
        tools_of[key],
        chat_template_kwargs=chat_template_kwargs,
        reuse=previous.format if previous is not None else None,
    )
    return last[key]


def check_prompt_budget(
    dataset_files: Iterable[str | Path],
    model_path: str | Path,
    max_prompt_length: int | None,
    chat_template_kwargs: dict[str, Any] | None = None,
) -> dict[str, tuple[int, int]]:
    """Longest opening prompt per env in the parquet files; ConfigError if one exceeds `max_prompt_length`.

    `max_prompt_length=None` only measures.
    """
    import pandas as pd
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(model_path))
    rows: list[dict[str, Any]] = []
    for path in dataset_files:
        rows.extend(pd.read_parquet(path).to_dict("records"))
    longest = longest_prompts(rows, tokenizer, chat_template_kwargs)
    if max_prompt_length is None:
        return longest
    too_long = {env_id: v for env_id, v in longest.items() if v[0] > max_prompt_length}
    if too_long:
        needed = max(n for n, _ in too_long.values())
        listed = ", ".join(
            f"{env_id} (seed {seed}: {n} tokens)" for env_id, (n, seed) in sorted(too_long.items())
        )
        raise ConfigError(
            f"opening prompts longer than data.max_prompt_length={max_prompt_length}: {listed}. "
            f"Set data.max_prompt_length={needed} or more (the env's tool schemas count too)."
        )
    return longest


def fitted_prompt_length(longest: dict[str, tuple[int, int]]) -> int:
    """The `auto` budget: the longest prompt rounded up to a multiple of PROMPT_LENGTH_MULTIPLE."""
    top = max((n for n, _ in longest.values()), default=1)
    return -(-top // PROMPT_LENGTH_MULTIPLE) * PROMPT_LENGTH_MULTIPLE
