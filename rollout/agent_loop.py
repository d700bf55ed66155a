"""TurnGymAgentLoop: the turngym episode runner as a verl agent loop (registered as "turngym").

verl instantiates it per sample (through `rollout/agent_loop.yaml` given as
`actor_rollout_ref.rollout.agent.agent_loop_config_path`, or `@register` when this module is
imported) and calls `run(sampling_params, **row)` with the dataset row's non-tensor columns, read
here as an `EpisodeRow` (rollout/episode_row.py: the columns the trainer writes). The engine is
verl's server manager; the episode logic is `rollout.episode.run_episode`, shared with
`rollout.collect`.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Mapping
from typing import Any

from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopMetrics, AgentLoopOutput, register

from rollout.env_servers import env_server_kwargs, failover_moves
from rollout.episode import EpisodeConfig, run_episode, with_policy_as_opponent
from rollout.episode_budgets import run_turn_limit
from rollout.episode_result import EpisodeHealth, EpisodeResult
from rollout.episode_row import AGENT_NAME, EpisodeRow
from rollout.reward_placement import place_turn_rewards

# The per-row columns the agent loop reads, by their EpisodeRow names (kept for callers of these).
DIFFICULTY_KEY = EpisodeRow.DIFFICULTY
TEMPERATURE_KEY = EpisodeRow.TEMPERATURE
SAMPLING_SEED_KEY = EpisodeRow.SAMPLING_SEED


def episode_spec(kwargs: dict[str, Any]) -> tuple[str, int | None, dict[str, Any]]:
    """(env_id, seed, env_kwargs) of a dataset row's columns (see `EpisodeRow.from_row`)."""
    row = EpisodeRow.from_row(kwargs)
    return row.env_id, row.seed, dict(row.env_kwargs)


@register(AGENT_NAME)
class TurnGymAgentLoop(AgentLoopBase):
    """Multi-turn env episodes under verl; per-turn rewards in `extra_fields`, their sum as reward."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        rc = self.rollout_config
        multi_turn = rc.get("multi_turn", {}) or {}
        # verl has no per-turn token cap; without one a reply that never ends eats the whole budget.
        per_turn = (self.config.get("turngym") or {}).get("max_tokens_per_turn")
        self.episode_config = EpisodeConfig(
            # The run's limit, from its one source (rollout/episode_budgets.py).
            max_turns=run_turn_limit(self.config),
            max_prompt_tokens=int(rc.prompt_length),
            max_response_tokens=int(rc.response_length),
            max_new_tokens=int(per_turn) if per_turn else None,
            chat_template_kwargs=dict(self.apply_chat_template_kwargs or {}),
            tool_call_format=multi_turn.get("format")
            if multi_turn.get("format") not in (None, "hermes")
            else None,
        )
        # turngym.env_servers: every episode on a pool of env servers instead of in this process.
        self.env_servers = env_server_kwargs(self.config.get("turngym"))

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        """Play the row's episode with verl's server manager as the engine."""
        import envs

        env, env_id, seed = None, None, None
        try:
            # A bad row or env id fails this sample, not the batch.
            row = EpisodeRow.from_row(kwargs)
            env_id, seed = row.env_id, row.seed
            play_kwargs = {**row.play_kwargs(), **self.env_servers}
            sampling = row.sampling(sampling_params)
            if self.env_servers:
                # Opening a session is an HTTP call (a hung server holds it until the timeout): keep
                # the other episodes of this worker's event loop going meanwhile. A served env's
                # opponent is its operator's (a callable cannot travel).
                env = await asyncio.to_thread(envs.make, env_id, **play_kwargs)
            else:
                play_kwargs = with_policy_as_opponent(
                    play_kwargs, self.server_manager, self.tokenizer, self.episode_config, sampling
                )
                env = envs.make(env_id, **play_kwargs)
            traj = await run_episode(
                env,
                self.server_manager,
                self.tokenizer,
                seed=seed,
                sampling_params=sampling,
                config=self.episode_config,
                request_id=uuid.uuid4().hex,
                env_id=env_id,
            )
        except Exception as exc:
            from rollout.failure_trace import describe_exception, record_first_failure
            from rollout.trajectory import Trajectory

            traj = Trajectory(prompt_ids=[], env_id=env_id, seed=seed, failed=True, termination="failed")
            traj.error = describe_exception(exc)
            record_first_failure(exc, env_id, seed)
        finally:
            if env is not None:
                with contextlib.suppress(Exception):
                    if self.env_servers:  # closing a session is an HTTP call too
                        await asyncio.to_thread(env.close)
                    else:
                        env.close()
        return trajectory_to_output(
            traj, self.tokenizer, self.episode_config.max_prompt_tokens, failover=failover_moves(env)
        )


class TurnRewardOutput(AgentLoopOutput):
    """An AgentLoopOutput whose `rm_scores` hold each turn's reward on that turn's last generated token.

    verl's `as_dict` (read by the v1 trainer's agent loop worker) puts all of `reward_score` on the
    last response token; turn-level estimators (trainer/estimators/turn_grpo.py, turn_gigpo.py) need the per-turn placement.
    Row sums, which GRPO and every reward metric read, do not change.
    """

    def as_dict(self) -> dict[str, Any]:
        """verl's dict, with `rm_scores` spread over the turns when they still add up to `reward_score`."""
        output = super().as_dict()
        scores = output.get("rm_scores")
        result = EpisodeResult.from_extra_fields(self.extra_fields)
        rewards, positions = result.rewards, result.reward_positions
        if scores is None or self.reward_score is None or result.failed:
            return output
        # A score replaced after the episode (e.g. by a reward function) no longer matches the turns.
        if not rewards or len(rewards) != len(positions) or abs(sum(rewards) - self.reward_score) > 1e-6:
            return output
        try:
            placed = place_turn_rewards(scores.numel(), positions, rewards)
        except ValueError:
            return output
        output["rm_scores"] = scores.new_tensor(placed)
        return output


def turn_anchors(traj: Any) -> list[str]:
    """Per turn, a digest of every token before it (prompt + response so far): the state it acted in.

    Within a GRPO group (same env and seed) equal digests mean equal histories, so the same state;
    GiGPO-style estimators (trainer/estimators/turn_gigpo.py) group turns by it.
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


def episode_health(traj: Any, tokenizer: Any) -> dict[str, Any]:
    """Per-episode numbers the trainer's health metrics read (trainer/hooks/health/metrics.py).

    ``tool_env``: the episode offered tools; ``valid_tool_turns``: turns with at least one tool call
    that parsed, ran without a tool error and drew no format error; ``drifted_turns``: turns whose
    ids re-tokenize differently (rollout/token_drift.py); ``generated_tokens``: tokens the model wrote.
    """
    from rollout.token_drift import drifted_turns

    turns = list(traj.turns)
    valid = sum(
        t.tool_calls > 0 and t.parse_errors == 0 and t.tool_errors == 0 and t.format_error is None
        for t in turns
    )
    return EpisodeHealth(
        tool_env=bool(traj.tools),
        valid_tool_turns=int(valid),
        drifted_turns=drifted_turns(tokenizer, traj.response_ids, [(t.start, t.end) for t in turns]),
        generated_tokens=int(sum(traj.loss_mask)),
    ).to_dict()


def _behaviour_counts(counts: Mapping[str, int] | None) -> dict[str, float]:
    """Every count a registered env reports, by name (0.0 where this episode has none)."""
    from envs.baselines.behaviour import behaviour_count_keys

    counts = counts or {}
    return {key: float(counts.get(key, 0)) for key in behaviour_count_keys()}


def behaviour_columns(counts: dict[str, int] | None) -> dict[str, float]:
    """``behaviour_<count>`` for every count a registered env reports (0.0 where this episode has none):
    verl keeps the same reward_extra_info keys on every row of a batch that mixes envs."""
    prefix = EpisodeResult.BEHAVIOUR_PREFIX
    return {prefix + key: value for key, value in _behaviour_counts(counts).items()}


def trajectory_to_output(
    traj: Any, tokenizer: Any, max_prompt_tokens: int | None, failover: Mapping[str, Any] | None = None
) -> AgentLoopOutput:
    """An AgentLoopOutput for verl; a failed episode becomes a masked-out placeholder flagged in extras.

    Args:
        traj: the episode (`rollout.trajectory.Trajectory`).
        tokenizer: the rollout's tokenizer (its pad id; the health numbers re-tokenize turns).
        max_prompt_tokens: a failed episode's placeholder prompt is cut to this many tokens.
        failover: the episode's env-server moves (`rollout.env_servers.failover_moves`); None: it stayed.

    Returns:
        The output; its ``extra_fields`` are `EpisodeResult.to_extra_fields` (rollout/episode_result.py),
        its ``num_turns`` is verl's count, the conversation's messages (`Trajectory.chat_turns`).
    """
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    m = traj.metrics or {}
    result = EpisodeResult.from_trajectory(
        traj,
        anchors=turn_anchors(traj),
        health=EpisodeHealth.from_mapping(episode_health(traj, tokenizer)),
        # The env's behaviour counts (envs/baselines/behaviour.py), one column per count any env names.
        behaviour_columns=_behaviour_counts(m.get("behaviour")),
        **dict(failover or {}),
    )
    extra = result.to_extra_fields()
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
        num_turns=traj.chat_turns,
        metrics=metrics,
        extra_fields=extra,
    )
