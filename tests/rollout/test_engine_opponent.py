"""EngineOpponent: a model behind a rollout engine plays the other seat of a TextArena game."""

import asyncio
import re

import pytest

import envs
from envs.textarena.env import OPPONENT_ERRORS
from rollout.collection import collect
from rollout.engine_opponent import (
    EngineOpponent,
    OpponentEngineError,
    describe_error,
    with_policy_opponent,
)
from rollout.episode import EpisodeConfig, run_episode, with_policy_as_opponent
from rollout.scripted_engine import ScriptedEngine
from turngym.engines.engine import EngineError, EngineRequestError

GAME = "textarena/TicTacToe-v0"


def random_cell(turn, rng):
    return f"[{rng.randint(0, 8)}]"


def free_cell_opponent_engine(tokenizer, **kwargs):
    """A scripted engine writing a random cell: a real engine that plays (often illegal) moves."""
    return ScriptedEngine(tokenizer, random_cell, **kwargs)


def test_plain_step_plays_the_engine_opponent(tokenizer):
    opponent = EngineOpponent(free_cell_opponent_engine(tokenizer), tokenizer)
    env = envs.make(GAME, opponent=opponent)
    env.reset(seed=3)
    observation, _, terminated, truncated, _ = env.step("[4]")
    assert opponent.moves >= 1 and opponent.failures == 0
    assert not truncated
    assert terminated or "[Opponent]" in str(observation)


def agent_generated_tokens(traj):
    return sum(traj.loss_mask)


def test_collect_with_the_embedded_model_as_opponent(tokenizer, hf_engine):
    """Self-play through one HFEngine: episodes end; only the agent's own tokens are trained on.

    The untrained tiny model writes no legal move in 8 tries, so the env stops each game after the agent's
    first turn. More tries add nothing but time: at 50 it still found none, and each refused try makes the
    next prompt longer (36-118 s, the last tries over the model's context).
    """
    opponent = EngineOpponent(hf_engine, tokenizer, max_new_tokens=4, seed=0)
    agent = free_cell_opponent_engine(tokenizer)
    trajs = collect(
        envs.make(GAME, opponent=opponent, opponent_attempts=8),
        agent,
        tokenizer,
        2,
        config=EpisodeConfig(max_turns=9),
    )
    assert len(trajs) == 2 and not trajs.failed
    assert opponent.moves >= 2 and opponent.generated_tokens > 0
    for t in trajs:
        assert t.termination in ("terminated", "truncated", "max_turns")
        # Every trained token is one the agent's engine wrote for one of its turns, no more.
        turn_tokens = sum(r.end - r.start for r in t.turns)
        assert agent_generated_tokens(t) == turn_tokens
        agent_ids = {tuple(agent.ids_for(f"[{c}]")) for c in range(9)}
        for r in t.turns:
            assert tuple(t.response_ids[r.start : r.end]) in agent_ids


def test_a_seeded_engine_opponent_repeats_its_moves(tokenizer, model_path):
    """Same seed, fresh engines: the same moves for the same positions; another seed samples others."""
    from turngym.engines.hf_engine import HFEngine

    env = envs.make(GAME)
    messages = env.reset(seed=1)[0]

    def moves(seed):
        opponent = EngineOpponent(HFEngine(model_path, seed=123), tokenizer, max_new_tokens=8, seed=seed)
        return [opponent([*messages[: i + 1]]) for i in range(len(messages))]

    first = moves(7)
    assert first == moves(7) and any(first)
    assert moves(8) != first


def test_a_failing_engine_ends_the_episode_after_a_few_requests(tokenizer, capsys):
    engine = free_cell_opponent_engine(tokenizer, fail_first=10**6)
    opponent = EngineOpponent(engine, tokenizer)
    env = envs.make(GAME, opponent=opponent)
    env.reset(seed=0)
    messages, reward, terminated, truncated, info = env.step("[4]")
    assert truncated and not terminated and info["opponent_stuck"] and reward == 0.0
    assert engine.calls == opponent.failures == opponent.moves == OPPONENT_ERRORS  # not OPPONENT_ATTEMPTS
    assert "OpponentEngineError" in info["opponent_error"] and "scripted failure" in info["opponent_error"]
    assert "The opponent could not move" in messages[-1]["content"]
    err = capsys.readouterr().err
    assert err.count("EngineOpponent") == 1 and "EngineError" in err


def test_an_engine_whose_server_is_down_ends_the_episode_quickly(tokenizer):
    """A real SGLang client with nothing listening: connection refused, three requests, episode over."""
    import socket

    from turngym.engines.sglang_engine import SGLangEngine

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens here
    opponent = EngineOpponent(SGLangEngine(f"http://127.0.0.1:{port}", retries=0), tokenizer)
    env = envs.make(GAME, opponent=opponent, seat=1)  # the opponent opens: reset asks it first
    opening, _ = env.reset(seed=0)
    assert "could not move" in opening[-1]["content"] and "Available Moves" in opening[-1]["content"]
    _, reward, terminated, truncated, info = env.step("[4]")
    assert truncated and info["opponent_stuck"] and opponent.failures == OPPONENT_ERRORS
    assert "OpponentEngineError" in info["opponent_error"]


def test_an_engine_failing_now_and_then_keeps_the_game_going(tokenizer):
    engine = free_cell_opponent_engine(tokenizer, fail_first=OPPONENT_ERRORS - 1)
    opponent = EngineOpponent(engine, tokenizer)
    env = envs.make(GAME, opponent=opponent)
    env.reset(seed=0)
    messages, _, terminated, truncated, info = env.step("[4]")
    assert not truncated and "opponent_error" not in info
    assert terminated or "[Opponent]" in messages[-1]["content"]
    assert opponent.failures == OPPONENT_ERRORS - 1 and engine.calls > OPPONENT_ERRORS - 1


def test_a_failing_engine_inside_collect_truncates_the_episode(tokenizer):
    engine = free_cell_opponent_engine(tokenizer, fail_first=10**6)
    opponent = EngineOpponent(engine, tokenizer)
    trajs = collect(envs.make(GAME, opponent=opponent), free_cell_opponent_engine(tokenizer), tokenizer, 1)
    assert len(trajs) == 1 and trajs[0].termination == "truncated"
    assert engine.calls == OPPONENT_ERRORS


@pytest.mark.parametrize("seat", [0, 1])
def test_opponent_self_is_the_policy_behind_the_collecting_engine(tokenizer, seat):
    """`opponent="self"`: collect makes each env with an EngineOpponent on the engine playing the agent."""
    engine = free_cell_opponent_engine(tokenizer)
    env = envs.make(GAME, opponent="self", seat=seat)
    trajs = collect(env, engine, tokenizer, 2, config=EpisodeConfig(max_turns=9))
    assert len(trajs) == 2 and not trajs.failed
    agent_turns = sum(len(t.turns) for t in trajs)
    assert engine.calls > agent_turns  # the opponent's moves came from the same engine
    for t in trajs:  # the tiny tokenizer's context can fill before the game ends
        assert t.termination in ("terminated", "truncated", "max_turns", "context_overflow")
        shown = " ".join(str(m.get("content")) for m in t.messages if m["role"] == "user")
        assert "[Opponent]" in shown and "could not move" not in shown
        if seat == 1:
            assert "[Opponent]" in t.messages[1]["content"]  # the policy opened the game at reset


class WaitsForTheLoop:
    """A scripted engine whose opponent requests wait until a coroutine on the caller's loop has run."""

    def __init__(self, tokenizer):
        self.inner = free_cell_opponent_engine(tokenizer)
        self.loop_ran = asyncio.Event()
        self.caller_loop: asyncio.AbstractEventLoop | None = None
        self.saw_the_loop_run: list[bool] = []

    async def generate(self, request_id, *, prompt_ids, sampling_params=None):
        if request_id.startswith("opponent-"):
            # Awaited on the caller's loop, the other coroutine runs meanwhile; a reset holding that loop
            # (or running the opponent on a loop of its own) could only time out here.
            on_caller_loop = asyncio.get_running_loop() is self.caller_loop
            try:
                await asyncio.wait_for(self.loop_ran.wait(), 10 if on_caller_loop else 0.01)
                self.saw_the_loop_run.append(on_caller_loop)
            except (TimeoutError, RuntimeError):  # RuntimeError: the Event belongs to another loop
                self.saw_the_loop_run.append(False)
        return await self.inner.generate(request_id, prompt_ids=prompt_ids, sampling_params=sampling_params)


def test_a_policy_opening_the_game_leaves_the_event_loop_free(tokenizer):
    engine = WaitsForTheLoop(tokenizer)
    env = envs.make(GAME, **with_policy_as_opponent({"opponent": "self", "seat": 1}, engine, tokenizer))

    async def other_episode():
        await asyncio.sleep(0)
        engine.loop_ran.set()

    async def both():
        engine.caller_loop = asyncio.get_running_loop()
        episode = run_episode(env, engine, tokenizer, seed=0, config=EpisodeConfig(max_turns=2))
        return (await asyncio.gather(episode, other_episode()))[0]

    traj = asyncio.run(both())
    assert not traj.failed and "[Opponent]" in traj.messages[1]["content"]
    assert engine.saw_the_loop_run and all(engine.saw_the_loop_run)


def test_with_policy_opponent_replaces_only_self(tokenizer):
    engine = free_cell_opponent_engine(tokenizer)
    assert with_policy_opponent({"seat": 1}, engine, tokenizer) == {"seat": 1}
    assert with_policy_opponent({"opponent": "random"}, engine, tokenizer) == {"opponent": "random"}
    kwargs = with_policy_opponent(
        {"opponent": "self", "seat": 1},
        engine,
        tokenizer,
        sampling_params={"temperature": 0.3, "max_tokens": 999},
        max_new_tokens=7,
    )
    opponent = kwargs["opponent"]
    assert isinstance(opponent, EngineOpponent) and kwargs["seat"] == 1
    assert opponent.sampling_params["temperature"] == 0.3 and opponent.sampling_params["max_new_tokens"] == 7
    assert "max_tokens" not in opponent.sampling_params
    cfg = EpisodeConfig(max_prompt_tokens=100, max_response_tokens=300, max_new_tokens=20)
    budgeted = with_policy_as_opponent({"opponent": "self"}, engine, tokenizer, cfg)["opponent"]
    assert budgeted.max_prompt_tokens == 380 and budgeted.sampling_params["max_new_tokens"] == 20


def test_an_env_made_with_self_outside_a_rollout_is_not_given_the_policy(tokenizer):
    # run_episode plays the env it is given: the policy comes in only where the rollout makes the env.
    engine = free_cell_opponent_engine(tokenizer)
    env = envs.make(GAME, opponent="self")
    traj = asyncio.run(run_episode(env, engine, tokenizer, seed=0, config=EpisodeConfig(max_turns=3)))
    assert traj.termination == "truncated" and engine.calls == 1  # the opponent asked no engine


class RecordingEngine:
    """A real engine that keeps each prompt it is sent and answers with one fixed move."""

    def __init__(self, tokenizer):
        self.tokenizer, self.prompts = tokenizer, []

    async def generate(self, request_id, *, prompt_ids, sampling_params=None):
        from turngym.engines.engine import Generation

        self.prompts.append(list(prompt_ids))
        return Generation(token_ids=self.tokenizer.encode("[0]", add_special_tokens=False))


def test_a_long_opponent_conversation_is_cut_to_its_prompt_budget(tokenizer):
    engine = RecordingEngine(tokenizer)
    messages = [{"role": "system", "content": "Play tic-tac-toe."}]
    for i in range(40):  # a weak opponent's refused tries pile up within one turn
        messages += [
            {"role": "user", "content": f"Board {i}: invalid move, try again."},
            {"role": "assistant", "content": f"[{i}]"},
        ]
    messages.append({"role": "user", "content": "Your move now."})
    EngineOpponent(engine, tokenizer)(messages)  # no budget: the whole conversation
    full = len(engine.prompts[-1])
    assert EngineOpponent(engine, tokenizer, max_prompt_tokens=120)(messages) == "[0]"
    sent = tokenizer.decode(engine.prompts[-1])
    assert len(engine.prompts[-1]) <= 120 < full
    assert "Play tic-tac-toe." in sent and "Your move now." in sent and "Board 0:" not in sent


def test_engine_errors_are_described_by_their_cause_in_one_line():
    class RemoteTaskError(Exception):  # how Ray wraps a remote exception: a traceback, the cause kept
        def __init__(self, cause):
            super().__init__("ray::Server.generate() (pid=1)\n  File ...\n" + "x" * 500)
            self.cause = cause

    described = describe_error(
        RemoteTaskError(EngineRequestError("prompt of 8244 tokens exceeds the model's 8192"))
    )
    assert described == "EngineRequestError: prompt of 8244 tokens exceeds the model's 8192"
    assert describe_error(ValueError("first\nlast line")) == "ValueError: last line"


def test_an_empty_reply_is_an_invalid_move(tokenizer):
    opponent = EngineOpponent(ScriptedEngine(tokenizer, lambda turn, rng: ""), tokenizer)
    assert opponent([{"role": "user", "content": "Your move."}]) == ""
    assert opponent.failures == 1


def test_the_move_is_capped_and_rendered_with_the_chat_template(tokenizer):
    seen = {}

    class Recording:
        async def generate(self, request_id, *, prompt_ids, sampling_params=None):
            seen.update(prompt=tokenizer.decode(prompt_ids), params=sampling_params)
            raise EngineError("recorded")

    opponent = EngineOpponent(Recording(), tokenizer, max_new_tokens=5, sampling_params={"temperature": 0.0})
    with pytest.raises(OpponentEngineError, match="recorded"):
        opponent([{"role": "system", "content": "Play well."}, {"role": "user", "content": "Board"}])
    messages = [{"role": "system", "content": "Play well."}, {"role": "user", "content": "Board"}]
    assert seen["prompt"] == tokenizer.apply_chat_template(
        messages, tokenize=False, add_generation_prompt=True
    )
    assert seen["params"]["max_new_tokens"] == 5 and seen["params"]["temperature"] == 0.0
    assert re.search(r"\d", str(seen["params"]["stop_token_ids"]))
