"""to_dataproto: trajectories as the tensors verl's PPO trainer consumes."""

from __future__ import annotations

from typing import Any

from rollout.episode_result import EpisodeResult
from rollout.reward_placement import place_turn_rewards
from rollout.trajectory import Trajectory


def to_dataproto(
    trajectories: list[Trajectory],
    *,
    pad_token_id: int = 0,
    prompt_length: int | None = None,
    response_length: int | None = None,
) -> Any:
    """A verl `DataProto` with verl's padding conventions.

    Tensors: `prompts` (left-padded), `responses`, `response_mask`, `rollout_log_probs`, `rm_scores`
    (each turn's reward on its last generated token; right-padded), `input_ids`, `attention_mask`,
    `position_ids`. Non-tensors: `uid` (the GRPO group), `env_id`, `seed`, `termination`, `success`,
    `turn_scores` (per-turn rewards), `__num_turns__` (verl's count: the conversation's messages,
    `Trajectory.chat_turns`, as on the training path; the assistant turns are `len(turn_scores)`).
    Widths default to the longest in the batch.
    """
    import numpy as np
    import torch
    from verl import DataProto

    if not trajectories:
        raise ValueError("no trajectories to convert (all episodes failed?)")
    n = len(trajectories)
    p_len = prompt_length or max(len(t.prompt_ids) for t in trajectories)
    r_len = response_length or max(max(len(t.response_ids) for t in trajectories), 1)
    prompts = torch.full((n, p_len), pad_token_id, dtype=torch.long)
    p_mask = torch.zeros((n, p_len), dtype=torch.long)
    responses = torch.full((n, r_len), pad_token_id, dtype=torch.long)
    r_attn = torch.zeros((n, r_len), dtype=torch.long)
    r_mask = torch.zeros((n, r_len), dtype=torch.long)
    logprobs = torch.zeros((n, r_len), dtype=torch.float32)
    scores = torch.zeros((n, r_len), dtype=torch.float32)
    for i, t in enumerate(trajectories):
        if len(t.prompt_ids) > p_len or len(t.response_ids) > r_len:
            raise ValueError(
                f"trajectory {i} ({len(t.prompt_ids)}+{len(t.response_ids)} tokens) exceeds "
                f"prompt_length={p_len} / response_length={r_len}"
            )
        if t.prompt_ids:
            prompts[i, p_len - len(t.prompt_ids) :] = torch.tensor(t.prompt_ids)
            p_mask[i, p_len - len(t.prompt_ids) :] = 1
        k = len(t.response_ids)
        if k:
            responses[i, :k] = torch.tensor(t.response_ids)
            r_attn[i, :k] = 1
            r_mask[i, :k] = torch.tensor(t.loss_mask)
            logprobs[i, :k] = torch.tensor(t.logprobs, dtype=torch.float32)
            placed = place_turn_rewards(k, t.reward_positions, t.rewards)
            scores[i, :k] = torch.tensor(placed, dtype=torch.float32)
    attention = torch.cat([p_mask, r_attn], dim=1)
    position_ids = (attention.cumsum(-1) - 1).clamp(min=0) * attention
    tensors = {
        "prompts": prompts,
        "responses": responses,
        "response_mask": r_mask,
        "input_ids": torch.cat([prompts, responses], dim=1),
        "attention_mask": attention,
        "position_ids": position_ids,
        "rollout_log_probs": logprobs,
        "rm_scores": scores,
    }

    def column(values: list) -> np.ndarray:
        arr = np.empty(n, dtype=object)
        arr[:] = values
        return arr

    non_tensors = {
        "uid": column([t.group or f"solo-{i}" for i, t in enumerate(trajectories)]),
        EpisodeResult.ENV_ID: column([t.env_id for t in trajectories]),
        "seed": column([t.seed for t in trajectories]),
        "termination": column([t.termination for t in trajectories]),
        "success": column([t.success for t in trajectories]),
        EpisodeResult.TURN_SCORES: column([t.rewards for t in trajectories]),
        "__num_turns__": np.array([t.chat_turns for t in trajectories], dtype=np.int32),
    }
    return DataProto.from_dict(tensors=tensors, non_tensors=non_tensors, meta_info={})
