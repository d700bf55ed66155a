"""TextArena adapter: every adapted id passes check_env, plays the same episode for the same seed, and
survives the hostile-action battery; registration never imports TextArena; left-out ids say why."""

from __future__ import annotations

import asyncio
import random
import re
import subprocess
import sys

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import envs
from envs.textarena import adapted_games, all_games, game, turngym_id
from envs.textarena.env import OPPONENT_ERRORS
from envs.textarena.exclusions import NO_RANDOM_OPENING
from envs.textarena.opponent import RandomOpponent

ADAPTED = [g.env_id for g in adapted_games()]
# The hostile battery of tests/envs/test_every_env.py and test_hostile_text.py, in short.
BAD_ACTIONS = [
    "",
    "   ",
    "x" * (1 << 20),
    "\x00\x01\x02\x1b[31m\x7f",
    None,
    42,
    3.5,
    b"bytes",
    ["list"],
    {"role": "user", "content": "hi"},
    {"role": "assistant", "content": 5},
    {"role": "assistant", "content": "", "tool_calls": "nope"},
    {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "nope", "arguments": "{}"}}]},
    {"role": "assistant", "content": "", "tool_calls": [5]},
    "<tool_call>\n{not json}\n</tool_call>",
    '<tool_call>\n{"name": "no_such_tool", "arguments": {}}\n</tool_call>',
    "<tool_call>\n" + '{"name": "x", "arguments": ' + "[" * 1000 + "\n</tool_call>",
    "[" * 5000,
    "]" * 5000 + "[",
    "[[[[]]]] [-1] [99999999999999999999] [nan] [ ] [\u202e] [٣]",
    "I resign. [resign] [quit] [exit]",
]
_READABLE = re.compile(r"\[[^\[\]]*\S[^\[\]]*\]")
STEPS = 6  # agent moves per determinism episode: enough to reach opponents' turns and refusals


def _policy_moves(env, seed: int, steps: int):
    """A seeded episode: the agent plays random bracketed moves it was shown (the random opponent's rule)."""
    agent = RandomOpponent(np.random.default_rng(seed))
    messages, info = env.reset(seed=seed)
    transcript, total = [messages], 0.0
    seen = list(messages)
    for _ in range(steps):
        move = agent(seen)
        messages, reward, terminated, truncated, info = env.step(move)
        seen += [{"role": "assistant", "content": move}, *messages]
        transcript.append(messages)
        total += reward
        if terminated or truncated:
            break
    return transcript, total


def test_enough_ids_are_adapted_and_registered():
    assert len(ADAPTED) >= 50
    registered = {s.id for s in envs.list_envs() if s.category.startswith("textarena")}
    assert registered == set(ADAPTED)
    assert envs.spec("textarena/Sudoku-v0").kwargs == {"game_id": "Sudoku-v0"}


@pytest.mark.parametrize("env_id", ADAPTED)
def test_contracts(env_id):
    """check_env on the raw and wrapped env, same seed same episode, hostile replies never end or crash it."""
    env = envs.make(env_id, max_turns=10_000)
    check_env(env.unwrapped, skip_render_check=False)
    check_env(env)

    outer = random.getstate(), np.random.get_state()[1].tolist()
    a = _policy_moves(env, seed=7, steps=STEPS)
    b = _policy_moves(envs.make(env_id, max_turns=10_000), seed=7, steps=STEPS)
    assert a == b
    # The episode ran on its own random state: the caller's global state is untouched.
    assert (random.getstate(), np.random.get_state()[1].tolist()) == outer

    opening, _ = env.reset(seed=0)
    assert [m["role"] for m in opening] == ["system", "user"] and "Action format" in opening[0]["content"]
    for action in BAD_ACTIONS:
        messages, reward, terminated, truncated, info = env.step(action)
        assert env.observation_space.contains(messages) and messages, (action, messages)
        assert isinstance(reward, float) and reward < 1.0 and not info.get("success")
        if isinstance(action, str) and _READABLE.search(action):
            # Bracketed junk is a move the game refuses: its own allowance may end the game (TextArena's rule).
            if terminated:
                assert "textarena_reason" in info and not truncated, (str(action)[:80], messages)
                env.reset(seed=0)
            continue
        assert not terminated and not truncated, (str(action)[:80], messages)
        assert reward <= 0.0
    deep = {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "x", "arguments": {}}}]}
    for _ in range(2000):
        deep = {"a": deep}
    messages, *_ = asyncio.run(env.unwrapped.astep({"role": "assistant", "content": "", "tool_calls": deep}))
    assert messages
    env.close()


def test_registration_does_not_import_textarena():
    code = "import sys, envs; envs.spec('textarena/Sudoku-v0'); print('textarena' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_an_episode_plays_to_the_end_with_textarena_rewards():
    env = envs.make("textarena/GuessTheNumber-v0")
    messages, info = env.reset(seed=3)
    assert info["textarena_id"] == "GuessTheNumber-v0" and "[5]" in messages[0]["content"]
    low, high = 1, 20
    for _ in range(10):
        guess = (low + high) // 2
        messages, reward, terminated, truncated, info = env.step(f"My guess: [{guess}]")
        if terminated:
            break
        if "higher" in messages[-1]["content"]:
            low = guess + 1
        else:
            high = guess - 1
    assert terminated and reward == 1.0 and info["success"] is True


def test_refused_move_is_the_games_refusal_with_its_reason_not_a_format_error():
    env = envs.make("textarena/TicTacToe-v0")
    env.reset(seed=0)
    messages, reward, terminated, truncated, info = env.step("[42]")
    assert info["format_error"] is None and "between 0 and 8" in info["invalid_move"]
    assert "between 0 and 8" in messages[-1]["content"] and reward == 0.0 and not terminated


def test_two_player_opponent_is_a_callable():
    seen = []

    def first_free_cell(messages):
        seen.append(messages)
        text = messages[-1]["content"]
        return next(f"[{i}]" for i in range(9) if f"'[{i}]'" in text)

    env = envs.make("textarena/TicTacToe-v0", opponent=first_free_cell)
    env.reset(seed=0)
    messages, *_ = env.step("[4]")
    assert seen and seen[0][0]["role"] == "system"
    assert "[Opponent] [0]" in messages[-1]["content"]
    with pytest.raises(ValueError, match="opponent must be"):
        envs.make("textarena/TicTacToe-v0", opponent="grandmaster")


def test_an_opponent_that_raises_ends_the_episode_after_a_few_tries():
    calls = []

    def broken(messages):
        calls.append(messages)
        raise ConnectionError("opponent server down")

    env = envs.make("textarena/TicTacToe-v0", opponent=broken)
    env.reset(seed=0)
    messages, reward, terminated, truncated, info = env.step("[4]")
    assert truncated and not terminated and reward == 0.0 and len(calls) == OPPONENT_ERRORS
    assert info["opponent_stuck"] and info["opponent_error"] == "ConnectionError: opponent server down"
    assert all(c == calls[0] for c in calls)  # asked the same question again, the board included
    assert "'[0]'" in calls[0][-1]["content"] and "could not move" in messages[-1]["content"]


def test_an_opponent_without_a_valid_move_is_cut_after_opponent_attempts():
    tries = []
    env = envs.make(
        "textarena/TicTacToe-v0", opponent=lambda m: tries.append(m) or "[42]", opponent_attempts=5
    )
    env.reset(seed=0)
    messages, reward, terminated, truncated, info = env.step("[4]")
    assert truncated and info["opponent_stuck"] and "opponent_error" not in info and len(tries) == 5
    assert "no valid move in 5 tries" in messages[-1]["content"]
    for bad in (0, -1, 2.5, True, "3"):
        with pytest.raises(ValueError, match="opponent_attempts"):
            envs.make("textarena/TicTacToe-v0", opponent_attempts=bad)


class TakesItsTime:
    """An async opponent (as EngineOpponent): `astep` awaits `amove`; plain `step` calls it."""

    def __init__(self, log):
        self.log = log

    async def amove(self, messages):
        self.log.append("asked")
        for _ in range(3):
            await asyncio.sleep(0)  # a real engine awaits its reply here
        self.log.append("moved")
        return next(f"[{i}]" for i in range(9) if f"'[{i}]'" in messages[-1]["content"])

    def __call__(self, messages):
        self.log.append("called")
        return next(f"[{i}]" for i in range(9) if f"'[{i}]'" in messages[-1]["content"])


def test_astep_awaits_an_async_opponent_and_leaves_the_event_loop_free():
    log = []
    env = envs.make("textarena/TicTacToe-v0", opponent=TakesItsTime(log))
    sync_env = envs.make("textarena/TicTacToe-v0", opponent=TakesItsTime([]))
    env.reset(seed=0)
    sync_env.reset(seed=0)

    async def other_episode():
        for _ in range(6):
            log.append("tick")
            await asyncio.sleep(0)

    async def both():
        return (await asyncio.gather(env.unwrapped.astep("[4]"), other_episode()))[0]

    messages, *_ = asyncio.run(both())
    assert "called" not in log and log.index("asked") < log.index("tick", log.index("asked")) < log.index(
        "moved"
    )
    assert messages == sync_env.step("[4]")[0]  # the same game either way


def test_left_out_ids_say_why_and_are_not_registered():
    left_out = [g for g in all_games().values() if g.excluded]
    assert left_out and all(g.excluded for g in left_out)
    for g in left_out:
        assert g.ta_id not in {a.ta_id for a in adapted_games()}
    with pytest.raises(ValueError, match="nltk"):
        game("Wordle-v0")
    with pytest.raises(ValueError, match="not a TextArena"):
        game("NoSuchGame-v0")


def test_ids_are_textarenas_own_in_the_textarena_namespace():
    assert turngym_id("Sudoku-v0") == "textarena/Sudoku-v0"
    assert turngym_id("GuessTheNumber-v0-hardcore") == "textarena/GuessTheNumber-v0-hardcore"
    for g in adapted_games():
        assert g.env_id == f"textarena/{g.ta_id}" and envs.spec(g.env_id).kwargs == {"game_id": g.ta_id}
    # Each is its own Gymnasium id: `textarena/2048-v0-3x3` (the variant after the version) included.
    assert gymnasium.make("textarena/2048-v0-3x3").unwrapped.game.ta_id == "2048-v0-3x3"
    assert gymnasium.spec("textarena/Sudoku-v0").version == 0
    with pytest.raises(envs.UnknownEnvError, match="textarena/Sudoku-v0"):
        envs.make("textarena-sudoku-v0")  # the earlier lowercase ids are gone; the error names the new one


def test_textarena_env_group_composes_without_starting_ray():
    from trainer.compose import ConfigError, compose_config, env_entries

    cfg = compose_config(["env=textarena", "trainer.device=cpu"])
    entries = env_entries(cfg)
    assert cfg.env.name == "textarena" and len(entries) >= 5
    # No scripted experts: the CPU platform's warm start is left off, and asking for it is an error.
    assert cfg.turngym.warm_start.enable is False
    with pytest.raises(ConfigError, match="scripted experts"):
        compose_config(["env=textarena", "trainer.device=cpu", "turngym.warm_start.enable=true"])
    assert {e["id"] for e in entries} <= set(ADAPTED)
    assert abs(sum(e["weight"] for e in entries) - 1.0) < 1e-9
    ray = sys.modules.get("ray")
    assert ray is None or not ray.is_initialized()
    for entry in entries:
        env = envs.make(entry["id"], **entry["kwargs"])
        messages, info = env.reset(seed=0)
        assert messages[-1]["role"] == "user" and info["textarena_id"]


def test_textarena_selfplay_group_composes_and_its_envs_wait_for_the_policy():
    from trainer.compose import compose_config, env_entries

    cfg = compose_config(["env=textarena-selfplay", "trainer.device=cpu"])
    entries = env_entries(cfg)
    assert cfg.env.name == "textarena-selfplay" and {e["kwargs"]["opponent"] for e in entries} == {"self"}
    assert {e["kwargs"].get("seat", 0) for e in entries} == {0, 1}
    assert abs(sum(e["weight"] for e in entries) - 1.0) < 1e-9
    for entry in entries:
        env = envs.make(entry["id"], **entry["kwargs"])
        assert env.unwrapped.opponent == "self"  # the rollout making its episodes puts the policy there
        messages, info = env.reset(seed=0)  # dataset rows render openings without a policy: no crash
        assert messages[-1]["role"] == "user" and info["textarena_id"]


def test_opponent_self_without_a_rollout_ends_the_episode_saying_why():
    env = envs.make("textarena/TicTacToe-v0", opponent="self")
    env.reset(seed=0)
    messages, reward, terminated, truncated, info = env.step("[4]")
    assert truncated and info["opponent_stuck"] and "opponent='self'" in info["opponent_error"]
    with pytest.raises(ValueError, match="two-player"):
        envs.make("textarena/Sudoku-v0", opponent="self")
    # What the rollout does with `opponent="self"`: the opponent comes in through the make kwargs.
    given = envs.make(
        "textarena/TicTacToe-v0",
        opponent=lambda m: next(f"[{i}]" for i in range(9) if f"'[{i}]'" in m[-1]["content"]),
    )
    given.reset(seed=0)
    assert "[Opponent] [0]" in given.step("[4]")[0][-1]["content"]


_DIGESTS = """
import hashlib, json, sys
import numpy as np
import envs
from envs.textarena.opponent import RandomOpponent

out = {}
for env_id in sys.argv[1:]:
    env = envs.make(env_id)
    agent = RandomOpponent(np.random.default_rng(3))
    messages, _ = env.reset(seed=3)
    seen, steps = list(messages), [messages]
    for _ in range(8):
        move = agent(seen)
        result = env.step(move)
        seen += [{"role": "assistant", "content": move}, *result[0]]
        steps.append(result[:4])
        if result[2] or result[3]:
            break
    out[env_id] = hashlib.sha1(json.dumps(steps, default=str).encode()).hexdigest()
print(json.dumps(out))
"""


def test_same_seed_same_episode_across_processes_with_different_hash_seeds():
    """Games that iterate over sets of strings would differ between processes: none of the adapted ones do."""
    import json
    import os

    digests = []
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        proc = subprocess.run(
            [sys.executable, "-c", _DIGESTS, *ADAPTED], capture_output=True, text=True, env=env, check=True
        )
        digests.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    assert digests[0] == digests[1]
    assert len(digests[0]) == len(ADAPTED)


def test_episode_random_owns_its_draws_and_restores_the_modules():
    from envs.textarena.episode_random import EpisodeRandom

    functions, state, np_state = random.randint, random.getstate(), np.random.get_state()[1].tolist()

    def draws(episode):
        with episode:
            return [random.randint(0, 10**9) for _ in range(3)], int(np.random.randint(10**9))

    first, second = EpisodeRandom(5, numpy_global=True), EpisodeRandom(5, numpy_global=True)
    a = draws(first)
    random.random()  # other code drawing in between changes nothing for the episode
    assert draws(second) == a and draws(first) == draws(second) != a
    assert random.randint is functions and random.getstate() != state  # ours drew once, outside
    assert np.random.get_state()[1].tolist() == np_state


def test_a_served_textarena_game_plays_exactly_like_the_local_one():
    from turngym.serving.loopback_server import spawn_server, stop_server

    url, proc = spawn_server(["-m", "envs", "serve"])
    try:
        for env_id in ("textarena/TicTacToe-v0", "textarena/Sudoku-v0-very-easy"):
            local, remote = envs.make(env_id), envs.make(env_id, remote=url)
            assert remote.reset(seed=4) == local.reset(seed=4)
            for action in ("[4]", "junk", "", "[0]", "[8]", "[1 1 1]", "[2]", "[6]"):
                assert remote.step(action) == local.step(action), action
            remote.close()
    finally:
        stop_server(proc)


def test_the_agent_can_take_the_second_seat():
    env = envs.make("textarena/TicTacToe-v0", seat=1)
    messages, info = env.reset(seed=2)
    assert info["seat"] == 1 and "[Opponent]" in messages[-1]["content"]  # the opponent opened
    free = next(f"[{i}]" for i in range(9) if f"'[{i}]'" in messages[-1]["content"])
    messages, reward, terminated, truncated, info = env.step(free)
    assert info["format_error"] is None and messages
    for bad in (2, "1", True):
        with pytest.raises(ValueError, match="seat must be one of"):
            envs.make("textarena/TicTacToe-v0", seat=bad)
    with pytest.raises(ValueError, match=r"seat must be one of \[0\]"):
        envs.make("textarena/Sudoku-v0", seat=1)


@pytest.mark.parametrize("env_id", [g.env_id for g in adapted_games() if g.players == 2])
def test_second_seat_same_seed_same_episode_and_bad_replies_kept(env_id):
    if envs.spec(env_id).kwargs["game_id"] in NO_RANDOM_OPENING:
        with pytest.raises(ValueError, match="finds no opening move"):
            envs.make(env_id, seat=1)
        envs.make(env_id, seat=1, opponent=lambda messages: "[0]")  # a callable opponent may open
        return
    a = _policy_moves(envs.make(env_id, seat=1, max_turns=10_000), seed=5, steps=STEPS)
    env = envs.make(env_id, seat=1, max_turns=10_000)
    assert _policy_moves(env, seed=5, steps=STEPS) == a
    env.reset(seed=1)
    for action in BAD_ACTIONS[:8]:
        messages, reward, terminated, truncated, info = env.step(action)
        assert messages and not terminated and not truncated, (str(action)[:40], messages)
