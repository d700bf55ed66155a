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

from trainer.compose import ConfigError

AUTO = "auto"
PROMPT_LENGTH_MULTIPLE = 64


def longest_prompts(
    rows: Iterable[dict[str, Any]], tokenizer: Any, chat_template_kwargs: dict[str, Any] | None = None
) -> dict[str, tuple[int, int]]:
    """For each env id in `rows`: (token count, seed) of its longest opening prompt, tools included."""
    import envs
    from rollout.chat_format import ChatFormat
    from rollout.episode_row import EpisodeRow, encode_kwargs
    from rollout.tool_prompt import place_tools, template_renders_tools

    formats: dict[tuple[str, str], tuple[ChatFormat, list[dict]]] = {}
    longest: dict[str, tuple[int, int]] = {}
    for row in rows:
        episode = EpisodeRow.from_row(row)
        env_id = episode.env_id
        key = (env_id, encode_kwargs(episode.env_kwargs))
        if key not in formats:
            # Tool schemas depend on the env and its kwargs, not on the seed: one env per kind.
            env = envs.make(env_id, **episode.env_kwargs)
            try:
                tools = list(env.tool_schemas)
            finally:
                env.close()
            # As the rollout does: a template that renders no tools gets them in the system message.
            listed = tools if tools and not template_renders_tools(tokenizer, chat_template_kwargs) else []
            formats[key] = (ChatFormat(tokenizer, None if listed else tools, chat_template_kwargs), listed)
        fmt, listed = formats[key]
        messages = [{"role": m["role"], "content": m["content"]} for m in episode.prompt]
        if listed:
            messages, _ = place_tools(tokenizer, messages, listed, chat_template_kwargs)
        n_tokens = len(fmt.prompt_ids(messages))
        if n_tokens > longest.get(env_id, (-1, 0))[0]:
            longest[env_id] = (n_tokens, int(episode.seed or 0))
    return longest


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
