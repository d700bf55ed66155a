"""collect / to_dataproto / failure handling / budget limits, with real envs and real engines."""

import asyncio

import pytest

from rollout.collection import collect, summarize
from rollout.episode import EpisodeConfig, run_episode
from rollout.scripted_engine import ScriptedEngine
from turngym.engines.engine import EngineError


def guess_call(n):
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": "call_0", "type": "function", "function": {"name": "guess", "arguments": {"number": n}}}
        ],
    }


def test_collect_groups_and_dataproto(tokenizer):
    engine = ScriptedEngine(tokenizer, lambda turn, rng: str(rng.randint(1, 20)))
    trajs = collect(
        "guess-number-v0",
        engine,
        tokenizer,
        6,
        group_size=3,
        concurrency=4,
        env_kwargs={"difficulty": "easy"},
    )
    assert len(trajs) == 6 and not trajs.failed
    groups = [t.group for t in trajs]
    assert len(set(groups)) == 2 and groups[0] == groups[2] != groups[3]
    assert trajs[0].seed == trajs[1].seed != trajs[3].seed
    assert trajs[0].prompt_ids == trajs[1].prompt_ids  # same seed -> same opening
    from rollout.dataproto import to_dataproto

    dp = to_dataproto(trajs, pad_token_id=tokenizer.pad_token_id)
    b = dp.batch
    for key in (
        "prompts",
        "responses",
        "response_mask",
        "attention_mask",
        "position_ids",
        "input_ids",
        "rollout_log_probs",
        "rm_scores",
    ):
        assert key in b
    assert list(dp.non_tensor_batch["uid"]) == groups
    for i, t in enumerate(trajs):
        k = len(t.response_ids)
        assert b["responses"][i, :k].tolist() == t.response_ids
        assert b["response_mask"][i, :k].tolist() == t.loss_mask and b["response_mask"][i, k:].sum() == 0
        assert b["rm_scores"][i].sum().item() == pytest.approx(t.total_reward, abs=1e-5)
        nz = b["rm_scores"][i].nonzero().flatten().tolist()
        assert set(nz) <= set(t.reward_positions)
        assert b["prompts"][i, -len(t.prompt_ids) :].tolist() == t.prompt_ids
        assert b["attention_mask"][i].sum().item() == len(t.prompt_ids) + k
    s = summarize(trajs)
    assert s["episodes"] == 6 and 0 <= s["success_rate"] <= 1 and s["turns_mean"] >= 1


def test_engine_errors_are_retried_then_episode_dropped(tokenizer):
    flaky = ScriptedEngine(tokenizer, lambda t, r: "5", fail_first=2)
    cfg = EpisodeConfig(engine_retries=2, retry_backoff=0.0)
    ok = asyncio.run(
        run_episode(__import__("envs").make("guess-number-v0"), flaky, tokenizer, seed=0, config=cfg)
    )
    assert not ok.failed and ok.metrics["engine_retries"] == 2

    class Down:
        async def generate(self, request_id, *, prompt_ids, sampling_params):
            raise EngineError("server down")

    batch = collect(
        "guess-number-v0", Down(), tokenizer, 3, config=EpisodeConfig(engine_retries=1, retry_backoff=0.0)
    )
    assert len(batch) == 0 and len(batch.failed) == 3
    assert "engine_error" in batch.failed[0].error
    assert summarize(batch)["failed_episodes"] == 3


def test_engine_timeout_counts_as_failure(tokenizer):
    slow = ScriptedEngine(tokenizer, lambda t, r: "5", latency=5)
    cfg = EpisodeConfig(engine_retries=0, engine_timeout=0.05)
    traj = asyncio.run(
        run_episode(__import__("envs").make("guess-number-v0"), slow, tokenizer, seed=0, config=cfg)
    )
    assert traj.failed and "timeout" in traj.error


def test_context_overflow_truncates_cleanly(tokenizer):
    env = __import__("envs").make("guess-number-v0")
    env.reset(seed=1)
    # Wrong guesses only: a lucky hit would end the game before the budget (the engine's draws
    # depend on the request id, which differs per run).
    wrong = [n for n in range(1, 101) if n != env.unwrapped.secret]
    engine = ScriptedEngine(tokenizer, lambda t, r: "I think the number might be " + str(r.choice(wrong)))
    cfg = EpisodeConfig(max_response_tokens=60, max_new_tokens=None)
    traj = asyncio.run(run_episode(env, engine, tokenizer, seed=1, config=cfg))
    assert traj.termination == "context_overflow" and traj.metrics["overflow"]
    assert len(traj.response_ids) <= 60
    # The response ends with a whole generated turn: nothing half-appended after it.
    assert traj.response_ids[-1] in (engine.format.end_of_turn_id,) and traj.loss_mask[-1] == 1


def test_per_turn_cap_closes_the_turn_with_a_context_token(tokenizer):
    engine = ScriptedEngine(tokenizer, lambda t, r: "a long reply that will be cut off before the number 12")
    cfg = EpisodeConfig(max_new_tokens=4, max_turns=2)
    traj = asyncio.run(
        run_episode(__import__("envs").make("guess-number-v0"), engine, tokenizer, seed=1, config=cfg)
    )
    t0 = traj.turns[0]
    assert t0.stop_reason == "length" and t0.end - t0.start == 4
    assert traj.response_ids[t0.end] == engine.format.end_of_turn_id and traj.loss_mask[t0.end] == 0
    assert traj.termination == "max_turns" and traj.metrics["turns_cut"] == 2


def test_bad_env_id_fails_the_episode_not_the_batch(tokenizer):
    engine = ScriptedEngine(tokenizer, lambda t, r: "5")

    def broken_env():
        raise RuntimeError("cannot build")

    batch = collect(broken_env, engine, tokenizer, 2)
    assert len(batch) == 0 and len(batch.failed) == 2 and "cannot build" in batch.failed[0].error


def test_hf_engine_collect_real_model(tokenizer, hf_engine):
    """The tiny random model plays guess-number with real sampling; logprobs are real and masked right."""
    trajs = collect(
        "guess-number-v0",
        hf_engine,
        tokenizer,
        4,
        group_size=2,
        sampling_params={"temperature": 1.0},
        config=EpisodeConfig(max_new_tokens=12, max_response_tokens=200),
    )
    assert len(trajs) == 4
    for t in trajs:
        gen_lps = [lp for lp, m in zip(t.logprobs, t.loss_mask, strict=True) if m]
        assert gen_lps and all(lp < 0 for lp in gen_lps)
        assert t.num_turns >= 1 and len(t.response_ids) <= 200


def test_success_rate_counts_cut_off_episodes_as_unsolved(tokenizer):
    # A reply that never parses: every episode ends on the token budget before the env judges it.
    engine = ScriptedEngine(tokenizer, lambda t, r: "no number here")
    trajs = collect(
        "guess-number-v0", engine, tokenizer, 2, config=EpisodeConfig(max_response_tokens=64, max_turns=64)
    )
    assert {t.termination for t in trajs} <= {"budget", "context_overflow", "max_turns"}
    assert all(t.success is None for t in trajs)
    assert summarize(trajs)["success_rate"] == 0.0


# ----- issue 13: the public API, env instances, the engine's context, the call format ---------------


def test_from_rollout_import_collect_is_the_function_after_the_module_loaded():
    import inspect

    import rollout
    import rollout.collection
    from rollout import acollect
    from rollout import collect as exported

    assert inspect.isfunction(exported) and exported is rollout.collection.collect
    assert inspect.iscoroutinefunction(acollect) and "acollect" in rollout.__all__
    assert inspect.signature(exported).return_annotation == "TrajectoryBatch"
    assert rollout.TrajectoryBatch is rollout.collection.TrajectoryBatch


def test_engine_parameters_are_typed_with_the_engine_protocol(tokenizer):
    import inspect

    from rollout import collection, episode
    from turngym.engines.engine import Engine

    for fn in (collection.collect, collection.acollect, episode.run_episode, episode.context_window):
        assert inspect.signature(fn).parameters["engine"].annotation == "Engine", fn.__name__
    assert isinstance(ScriptedEngine(tokenizer, lambda turn, rng: "5"), Engine)


def test_collect_accepts_an_env_made_by_envs_make(tokenizer):
    import envs

    env = envs.make("guess-number-v0", difficulty="easy", max_turns=3)
    engine = ScriptedEngine(tokenizer, lambda turn, rng: str(rng.randint(1, 20)))
    trajs = collect(env, engine, tokenizer, 4, group_size=2)
    assert len(trajs) == 4 and not trajs.failed
    # Each episode played a fresh copy made the same way: easy range, three turns at most.
    assert all("between 1 and 20" in t.messages[1]["content"] for t in trajs)
    assert all(t.num_turns <= 3 for t in trajs)
    assert {t.env_id for t in trajs} == {"guess-number-v0"}
    assert env.unwrapped.turn == 0  # the instance itself was never stepped


def test_collect_refuses_what_it_cannot_make_envs_from_at_once(tokenizer):
    import envs

    engine = ScriptedEngine(tokenizer, lambda turn, rng: "5")
    with pytest.raises(TypeError, match="env id"):
        collect(42, engine, tokenizer, 2)
    bare = envs.make("guess-number-v0").unwrapped
    del bare.turngym_spec  # an env instance built by hand: nothing to copy it from
    with pytest.raises(TypeError, match="not made by envs.make"):
        collect(bare, engine, tokenizer, 2)
    with pytest.raises(envs.UnknownEnvError, match="guess-number-v0"):
        collect("guess-numbr-v0", engine, tokenizer, 2)
    assert engine.calls == 0


def test_env_class_is_a_factory(tokenizer):
    from envs.games.guess_number import GuessNumberEnv

    engine = ScriptedEngine(tokenizer, lambda turn, rng: str(rng.randint(1, 100)))
    trajs = collect(GuessNumberEnv, engine, tokenizer, 2, config=EpisodeConfig(max_turns=2))
    assert len(trajs) == 2 and not trajs.failed


def test_small_context_ends_as_overflow_with_tokens_kept(model_path, tokenizer):
    """A model with a 512-token context and the default budget (2048): episodes end as overflow, not failed."""
    from transformers import AutoModelForCausalLM

    from rollout.episode import context_window
    from turngym.engines.hf_engine import HFEngine

    model = AutoModelForCausalLM.from_pretrained(model_path, max_position_embeddings=512)
    engine = HFEngine(model, tokenizer=tokenizer, seed=0)
    assert context_window(engine) == 512
    batch = collect(
        "guess-number-v0",
        engine,
        tokenizer,
        2,
        sampling_params={"temperature": 1.0},
        config=EpisodeConfig(max_new_tokens=48),
        keep_failed=True,
    )
    assert not batch.failed, [t.error for t in batch.failed]
    for t in batch:
        assert len(t.prompt_ids) + len(t.response_ids) <= 512
        assert t.response_ids and sum(t.loss_mask) > 0
        assert t.overflowed or t.termination in ("terminated", "truncated")
    assert any(t.overflowed for t in batch)


def test_prompt_longer_than_the_context_fails_with_a_clear_reason(tokenizer):
    class TinyContext(ScriptedEngine):
        max_positions = 8

    engine = TinyContext(tokenizer, lambda turn, rng: "5")
    batch = collect("guess-number-v0", engine, tokenizer, 1, keep_failed=True)
    assert (
        batch.failed
        and "prompt_too_long" in batch.failed[0].error
        and "context of 8" in batch.failed[0].error
    )


def test_env_reads_calls_in_the_templates_format(llama3_tokenizer):
    """With a Llama 3 template, a broken llama3 call is reported as unreadable, not played as text."""
    import envs

    broken = '{"name": "guess", "parameters": {"number": 5'
    engine = ScriptedEngine(llama3_tokenizer, lambda turn, rng: broken)
    env = envs.make("guess-number-v0")
    traj = asyncio.run(run_episode(env, engine, llama3_tokenizer, seed=0, config=EpisodeConfig(max_turns=1)))
    assert not traj.failed and env.unwrapped.tool_call_format == "llama3"
    said = traj.messages[-1]["content"]
    assert "could not be read" in said and "is wrong" not in said and "Correct" not in said


def test_remote_env_instance_is_refused_not_copied_locally(tokenizer):
    from envs.remote.client import RemoteEnv

    # Built without a server: only its type and address matter to collect, which must not run it here.
    remote = RemoteEnv.__new__(RemoteEnv)
    remote.env_id, remote.url = "guess-number-v0", "http://127.0.0.1:9"
    engine = ScriptedEngine(tokenizer, lambda turn, rng: "5")
    with pytest.raises(TypeError, match="RemoteEnv"):
        collect(remote, engine, tokenizer, 2)
