"""TurnGymAgentLoop: the turngym episode runner as a verl agent loop (registered as "turngym").

verl instantiates it per sample (through `rollout/agent_loop.yaml` given as
`actor_rollout_ref.rollout.agent.agent_loop_config_path`, or `@register` when this module is
imported) and calls `run(sampling_params, **row)` with the dataset row's non-tensor columns. The row's
`extra_info` names the episode: `{"env_id": str, "seed": int, "env_kwargs": dict | JSON str}`.
The engine is verl's server manager; the episode logic is `rollout.episode.run_episode`, shared with
`rollout.collect`.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from typing import Any

from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopMetrics, AgentLoopOutput, register

from rollout.episode import EpisodeConfig, run_episode

AGENT_NAME = "turngym"
# Optional per-row column: the difficulty to play this row at, overriding env_kwargs' (set by the
# trainer's curriculum; rows without it play as the dataset says).
DIFFICULTY_KEY = "turngym_difficulty"
# Optional per-row column: the sampling temperature for this row (0 = greedy), overriding the batch's;
# validation rows carry it so one pass measures greedy and sampled play (trainer/datasets.py).
TEMPERATURE_KEY = "turngym_temperature"
# Row column: seeds the episode's sampling (validation rows carry their env seed, so the same weights
# replay the same held-out episodes; training rows leave it empty and GRPO's samples differ).
SAMPLING_SEED_KEY = "turngym_sampling_seed"


def episode_spec(kwargs: dict[str, Any]) -> tuple[str, int | None, dict[str, Any]]:
    """(env_id, seed, env_kwargs) from a dataset row's columns (`extra_info` or top-level keys)."""
    extra = kwargs.get("extra_info") or {}
    if isinstance(extra, str):
        extra = json.loads(extra)
    env_id = extra.get("env_id", kwargs.get("env_id"))
    if not env_id:
        raise ValueError("dataset row has no env_id (expected extra_info.env_id)")
    seed = extra.get("seed", kwargs.get("seed"))
    env_kwargs = extra.get("env_kwargs", kwargs.get("env_kwargs")) or {}
    if isinstance(env_kwargs, str):
        env_kwargs = json.loads(env_kwargs) if env_kwargs.strip() else {}
    # Parquet stores dicts as structs with the union of all rows' keys; absent keys come back as None.
    env_kwargs = {k: v for k, v in dict(env_kwargs).items() if v is not None}
    return str(env_id), None if seed is None else int(seed), env_kwargs


@register(AGENT_NAME)
class TurnGymAgentLoop(AgentLoopBase):
    """Multi-turn env episodes under verl; per-turn rewards in `extra_fields`, their sum as reward."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        rc = self.rollout_config
        multi_turn = rc.get("multi_turn", {}) or {}
        max_turns = multi_turn.get("max_assistant_turns") or 64
        # verl has no per-turn token cap; without one a reply that never ends eats the whole budget.
        per_turn = (self.config.get("turngym") or {}).get("max_tokens_per_turn")
        self.episode_config = EpisodeConfig(
            max_turns=int(max_turns),
            max_prompt_tokens=int(rc.prompt_length),
            max_response_tokens=int(rc.response_length),
            max_new_tokens=int(per_turn) if per_turn else None,
            chat_template_kwargs=dict(self.apply_chat_template_kwargs or {}),
            tool_call_format=multi_turn.get("format")
            if multi_turn.get("format") not in (None, "hermes")
            else None,
        )

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        """Play the row's episode with verl's server manager as the engine."""
        import envs

        env_id, seed, env_kwargs = episode_spec(kwargs)
        if kwargs.get(DIFFICULTY_KEY):
            env_kwargs["difficulty"] = str(kwargs[DIFFICULTY_KEY])
        temperature = kwargs.get(TEMPERATURE_KEY)
        if temperature is not None and temperature == temperature:  # parquet fills absent values with NaN
            sampling_params = {**sampling_params, "temperature": float(temperature)}
        sampling_seed = kwargs.get(SAMPLING_SEED_KEY)
        if sampling_seed is not None and sampling_seed == sampling_seed:
            sampling_params = {**sampling_params, "sampling_seed": int(sampling_seed)}
        env = None
        try:
            env = envs.make(env_id, **env_kwargs)
            traj = await run_episode(
                env,
                self.server_manager,
                self.tokenizer,
                seed=seed,
                sampling_params=sampling_params,
                config=self.episode_config,
                request_id=uuid.uuid4().hex,
                env_id=env_id,
            )
        except Exception as exc:  # a bad row or env id fails this sample, not the batch
            from rollout.trajectory import Trajectory

            traj = Trajectory(prompt_ids=[], env_id=env_id, seed=seed, failed=True, termination="failed")
            traj.error = f"{type(exc).__name__}: {exc}"
        finally:
            if env is not None:
                with contextlib.suppress(Exception):
                    env.close()
        return trajectory_to_output(traj, self.tokenizer, self.episode_config.max_prompt_tokens)


class TurnRewardOutput(AgentLoopOutput):
    """An AgentLoopOutput whose `rm_scores` hold each turn's reward on that turn's last generated token.

    verl's `as_dict` (read by the v1 trainer's agent loop worker) puts all of `reward_score` on the
    last response token; turn-level estimators (trainer/turn_credit.py) need the per-turn placement.
    Row sums, which GRPO and every reward metric read, do not change.
    """

    def as_dict(self) -> dict[str, Any]:
        """verl's dict, with `rm_scores` spread over the turns when they still add up to `reward_score`."""
        output = super().as_dict()
        scores = output.get("rm_scores")
        extra = self.extra_fields
        rewards, positions = extra.get("turn_scores") or [], extra.get("turn_reward_positions") or []
        if scores is None or self.reward_score is None or extra.get("turngym_failed"):
            return output
        # A score replaced after the episode (e.g. by a reward function) no longer matches the turns.
        if not rewards or len(rewards) != len(positions) or abs(sum(rewards) - self.reward_score) > 1e-6:
            return output
        if any(not 0 <= int(p) < scores.numel() for p in positions):
            return output
        per_turn = scores.new_zeros(scores.shape)
        for p, r in zip(positions, rewards, strict=True):
            per_turn[int(p)] += float(r)
        output["rm_scores"] = per_turn
        return output


def turn_anchors(traj: Any) -> list[str]:
    """Per turn, a digest of every token before it (prompt + response so far): the state it acted in.

    Within a GRPO group (same env and seed) equal digests mean equal histories, so the same state;
    GiGPO-style estimators (trainer/turn_credit.py) group turns by it.
    """
    import hashlib

    digest = hashlib.blake2b(digest_size=16)
    digest.update(repr(list(traj.prompt_ids)).encode())
    anchors, done = [], 0
    for turn in traj.turns:
        digest.update(repr(list(traj.response_ids[done : turn.start])).encode())
        done = turn.start
        anchors.append(digest.copy().hexdigest())
    return anchors


def trajectory_to_output(traj: Any, tokenizer: Any, max_prompt_tokens: int | None) -> AgentLoopOutput:
    """An AgentLoopOutput for verl; a failed episode becomes a masked-out placeholder flagged in extras."""
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    m = traj.metrics or {}
    extra: dict[str, Any] = dict(traj.extra_fields)
    extra.update(
        {
            "turn_scores": list(traj.rewards),
            "turn_reward_positions": list(traj.reward_positions),
            "turn_anchors": turn_anchors(traj),
            "turngym_failed": bool(traj.failed),
            "turngym_error": traj.error,
            "turngym_termination": traj.termination,
            "env_id": traj.env_id,
            "reward_extra_info": {
                "success": float(bool(traj.success)),
                "turns": float(traj.num_turns),
                "episode_failed": float(traj.failed),
                "overflow": float(bool(m.get("overflow", False))),
                # per episode: turns cut by the per-turn cap (or the budget), replies the env could not read
                "turns_cut": float(m.get("turns_cut", 0)),
                "format_errors": float(m.get("format_errors", 0)),
            },
        }
    )
    metrics = AgentLoopMetrics(
        generate_sequences=float(m.get("generate_s", 0.0)), tool_calls=float(m.get("env_s", 0.0))
    )
    if traj.failed:
        prompt = list(traj.prompt_ids or [pad])
        if max_prompt_tokens is not None:
            prompt = prompt[-max_prompt_tokens:]
        # Loss mask 0 everywhere: the sample carries no gradient; trainers may also drop it by the flag.
        return AgentLoopOutput(
            prompt_ids=prompt,
            response_ids=[pad],
            response_mask=[0],
            response_logprobs=[0.0],
            reward_score=0.0,
            num_turns=0,
            metrics=metrics,
            extra_fields=extra,
        )
    response = list(traj.response_ids) or [pad]
    mask = list(traj.loss_mask) or [0]
    logprobs = list(traj.logprobs) or [0.0]
    return TurnRewardOutput(
        prompt_ids=list(traj.prompt_ids),
        response_ids=response,
        response_mask=mask,
        response_logprobs=logprobs,
        # verl needs a reward_score to skip its reward function; TurnRewardOutput spreads it over the
        # turns in rm_scores (outcome estimators sum it back). Per-turn values are also in extra_fields.
        reward_score=float(traj.total_reward),
        num_turns=len(traj.messages),
        metrics=metrics,
        extra_fields=extra,
    )
