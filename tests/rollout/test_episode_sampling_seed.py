"""A sampling seed in an episode's sampling params replays the episode exactly, with a seed per turn."""

from __future__ import annotations

import asyncio

import envs
from rollout.episode import EpisodeConfig, run_episode, turn_sampling_seed
from rollout.scripted_engine import ScriptedEngine

CFG = EpisodeConfig(max_new_tokens=8, max_response_tokens=1152, max_turns=8)


def _play(engine, tokenizer, params):
    env = envs.make("guess-number-v0", difficulty="easy", action_tool=False)
    return asyncio.run(run_episode(env, engine, tokenizer, seed=3, sampling_params=params, config=CFG))


def test_a_seeded_episode_replays_token_for_token(hf_engine, tokenizer):
    params = {"temperature": 1.0, "sampling_seed": 11}
    first, again = _play(hf_engine, tokenizer, params), _play(hf_engine, tokenizer, params)
    assert not first.failed and first.response_ids == again.response_ids
    others = [
        _play(hf_engine, tokenizer, {"temperature": 1.0, "sampling_seed": s}).response_ids for s in (12, 13)
    ]
    assert any(o != first.response_ids for o in others)


class SeedRecordingEngine(ScriptedEngine):
    """A scripted engine that keeps the sampling seed of every request."""

    def __init__(self, tokenizer):
        super().__init__(tokenizer, lambda turn, rng: str(turn + 1))
        self.seeds: list[int | None] = []

    async def generate(self, request_id, *, prompt_ids, sampling_params=None):
        self.seeds.append((sampling_params or {}).get("sampling_seed"))
        return await super().generate(request_id, prompt_ids=prompt_ids, sampling_params=sampling_params)


def test_each_turn_gets_its_own_seed_and_unseeded_episodes_get_none(tokenizer):
    engine = SeedRecordingEngine(tokenizer)
    traj = _play(engine, tokenizer, {"temperature": 1.0, "seed": 5})
    assert traj.num_turns >= 3 and len(engine.seeds) == traj.num_turns
    assert engine.seeds == [turn_sampling_seed(5, k) for k in range(traj.num_turns)]
    assert len(set(engine.seeds)) == len(engine.seeds)
    plain = SeedRecordingEngine(tokenizer)
    _play(plain, tokenizer, {"temperature": 1.0})
    assert set(plain.seeds) == {None}
