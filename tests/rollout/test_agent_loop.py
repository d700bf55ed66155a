"""The verl agent loop: registered by YAML, driven by verl's own AgentLoopWorker (no Ray), HFEngine behind."""

import asyncio
import os
from pathlib import Path

import numpy as np
import pytest

from rollout.agent_loop import episode_spec, trajectory_to_output

YAML = Path(__file__).resolve().parents[2] / "rollout" / "agent_loop.yaml"


def test_episode_spec_reads_extra_info_and_json_kwargs():
    assert episode_spec({"extra_info": {"env_id": "x", "seed": 3, "env_kwargs": {"a": 1, "b": None}}}) == (
        "x",
        3,
        {"a": 1},
    )
    assert episode_spec(
        {"extra_info": {"env_id": "x", "seed": np.int64(2), "env_kwargs": '{"d": "easy"}'}}
    ) == ("x", 2, {"d": "easy"})
    with pytest.raises(ValueError, match="env_id"):
        episode_spec({"extra_info": {}})


def test_training_path_and_to_dataproto_put_each_turns_reward_on_the_same_token(tokenizer):
    """verl's rm_scores from the agent loop and to_dataproto's agree token for token on a multi-turn episode.

    `as_dict` is what verl's v1 trainer stores per sample (AgentLoopWorkerTQ._agent_loop_postprocess);
    the older AgentLoopWorker driven below re-places `reward_score` on the last token itself.
    """
    import envs
    from rollout.dataproto import to_dataproto
    from rollout.episode import EpisodeConfig, run_episode
    from rollout.scripted_engine import ScriptedEngine

    # Replies the maze cannot read cost a penalty on their own turn: rewards on several turns.
    moves = ["50", "up", "crane", "7"]
    engine = ScriptedEngine(tokenizer, lambda turn, rng: moves[turn % len(moves)])
    config = EpisodeConfig(max_turns=4, max_new_tokens=None)
    traj = asyncio.run(run_episode(envs.make("maze-v0"), engine, tokenizer, seed=3, config=config))
    rewarded = [p for p, r in zip(traj.reward_positions, traj.rewards, strict=True) if r]
    assert traj.num_turns == 4 and len(rewarded) >= 2  # rewards on more than one turn, not all at the end

    training = trajectory_to_output(traj, tokenizer, None).as_dict()["rm_scores"].tolist()
    batch = to_dataproto([traj], response_length=len(traj.response_ids) + 5).batch["rm_scores"][0].tolist()
    assert training == batch[: len(traj.response_ids)] and not any(batch[len(traj.response_ids) :])
    assert [i for i, v in enumerate(training) if v] == rewarded
    assert [training[p] for p in rewarded] == pytest.approx([r for r in traj.rewards if r])


@pytest.mark.slow
def test_verl_agent_loop_worker_runs_turngym_rows(model_path):
    import torch
    import verl
    from hydra import compose, initialize_config_dir
    from verl import DataProto
    from verl.experimental.agent_loop.agent_loop import AgentLoopWorker

    from turngym.engines.hf_engine import HFEngine

    cfg_dir = os.path.join(os.path.dirname(verl.__file__), "trainer", "config")
    with initialize_config_dir(config_dir=cfg_dir, version_base=None):
        cfg = compose(
            "ppo_trainer",
            overrides=[
                f"actor_rollout_ref.model.path={model_path}",
                "actor_rollout_ref.rollout.prompt_length=512",
                "actor_rollout_ref.rollout.response_length=192",
                f"actor_rollout_ref.rollout.agent.agent_loop_config_path={YAML}",
                "actor_rollout_ref.rollout.multi_turn.max_assistant_turns=3",
                "actor_rollout_ref.rollout.name=sglang",
            ],
        )
    engine = HFEngine(model_path)

    class Client:  # verl's server-manager signature (extra keyword arguments) over HFEngine
        async def generate(self, request_id, *, prompt_ids, sampling_params, **_):
            return await engine.generate(
                request_id, prompt_ids=prompt_ids, sampling_params={**sampling_params, "max_tokens": 16}
            )

    n = 4

    def col(values):
        a = np.empty(n, dtype=object)
        a[:] = values
        return a

    rows = [
        {"env_id": "guess-number-v0", "seed": i // 2, "env_kwargs": {"difficulty": "easy"}, "index": i}
        for i in range(n)
    ]
    rows[3] = {"env_id": "no-such-env-v0", "seed": 0, "index": 3}
    batch = DataProto.from_dict(
        tensors={"dummy_tensor": torch.zeros(n, 1, dtype=torch.uint8)},
        non_tensors={
            "raw_prompt": col([[{"role": "user", "content": "unused"}]] * n),
            "agent_name": col(["turngym"] * n),
            "extra_info": col(rows),
            "index": col(list(range(n))),
            "data_source": col(["turngym"] * n),
        },
        meta_info={"global_steps": 1},
    )

    async def run():
        worker = AgentLoopWorker(cfg, llm_client=Client())
        return await worker.generate_sequences(batch)

    out = asyncio.run(run())
    b, nt = out.batch, out.non_tensor_batch
    assert b["responses"].shape == (n, 192) and b["prompts"].shape == (n, 512)
    assert list(nt["turngym_failed"]) == [False, False, False, True]
    assert "no-such-env-v0" in nt["turngym_error"][3]
    assert b["response_mask"][3].sum() == 0
    for i in range(3):
        assert b["rm_scores"][i].sum().item() == pytest.approx(sum(nt["turn_scores"][i]), abs=1e-5)
        assert b["response_mask"][i].sum() > 0
        gen = b["response_mask"][i].bool()
        assert (b["rollout_log_probs"][i][gen] < 0).all() and (b["rollout_log_probs"][i][~gen] == 0).all()


def _agent_loop(tokenizer, engine, max_assistant_turns):
    """TurnGymAgentLoop as verl builds it, with `engine` as its server manager."""
    from omegaconf import OmegaConf
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap

    from rollout.agent_loop import TurnGymAgentLoop

    cfg = OmegaConf.create(
        {
            "actor_rollout_ref": {
                "rollout": {
                    "prompt_length": 1024,
                    "response_length": 512,
                    "multi_turn": {"max_assistant_turns": max_assistant_turns},
                }
            },
            "data": {},
            "turngym": {"max_tokens_per_turn": None},
        }
    )
    return TurnGymAgentLoop(
        trainer_config=DictConfigWrap(cfg),
        server_manager=engine,
        tokenizer=tokenizer,
        processor=None,
        dataset_cls=None,
        data_config=DictConfigWrap(cfg.data),
    )


def _wrong_guesses(tokenizer):
    """An engine that always guesses 1 with the guess tool (never right for the seeds below)."""
    import envs
    from rollout.scripted_engine import ScriptedEngine

    call = {"id": "c", "type": "function", "function": {"name": "guess", "arguments": {"number": 1}}}
    tools = envs.make("guess-number-v0").tool_schemas
    return ScriptedEngine(
        tokenizer, lambda turn, rng: {"role": "assistant", "content": "", "tool_calls": [call]}, tools=tools
    )


@pytest.mark.parametrize("env_kwargs, played", [({}, 3), ({"max_turns": 2}, 2)])
def test_the_runs_turn_limit_is_the_one_the_episode_plays(tokenizer, env_kwargs, played):
    """max_assistant_turns=3 caps a guess-number episode (7 guesses, an env limit of 20) at 3 turns; an
    env whose own limit is lower ends first, and the run names it before training."""
    from omegaconf import OmegaConf

    from rollout.episode_result import EpisodeResult
    from rollout.episode_row import EpisodeRow
    from trainer.compose import turn_limit_notes

    loop = _agent_loop(tokenizer, _wrong_guesses(tokenizer), 3)
    assert loop.episode_config.max_turns == 3
    row = EpisodeRow("guess-number-v0", 5, {"difficulty": "easy", **env_kwargs}).to_row()
    out = asyncio.run(loop.run({"temperature": 1.0}, **row))
    result = EpisodeResult.from_extra_fields(out.extra_fields)
    assert not result.failed and result.assistant_turns == played
    assert result.termination == ("max_turns" if played == 3 else "truncated")
    cfg = OmegaConf.create({"actor_rollout_ref": {"rollout": {"multi_turn": {"max_assistant_turns": 3}}}})
    entries = [{"id": "guess-number-v0", "weight": 1.0, "kwargs": {"difficulty": "easy", **env_kwargs}}]
    notes = turn_limit_notes(cfg, entries)
    assert len(notes) == (played < 3) and all("after 2 turns, under the run's limit of 3" in n for n in notes)


def test_a_null_turn_limit_is_the_rollouts_default_everywhere(tokenizer):
    from rollout.episode import EpisodeConfig
    from rollout.episode_budgets import run_turn_limit

    loop = _agent_loop(tokenizer, _wrong_guesses(tokenizer), None)
    assert loop.episode_config.max_turns == EpisodeConfig.max_turns == run_turn_limit(loop.config)
