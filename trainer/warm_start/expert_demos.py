"""Expert demonstrations: the envs' scripted experts played out as chat conversations for SFT.

Optionally mixed with a weaker player's episodes, like most real demonstration data.

Written as parquet in the layout of verl's ``MultiTurnSFTDataset`` (``messages`` and ``tools``
columns), so verl's SFT trainer reads them as they are. The tool schemas are the ones the
rollout puts in the prompt, so the warm-started model sees the same opening tokens as in RL.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: A played demonstration: (its messages, the env's tool schemas, its total reward).
Demo = tuple[list[dict], list[dict], float]
# A reply without a move: the format error a model that talks instead of playing makes.
TALK_REPLY = "Let me think."
# Enough error -> talk pairs to show that a talker keeps talking, fewer tokens than an expert's game.
TALK_TURNS = 3
OTHER_PLAYERS = ("random", "talk")
PLAYER_NAMES = {"expert": "scripted expert", "random": "random player", "talk": "talker"}


class DemoEpisodeError(RuntimeError):
    """An env raised while a demonstration was played: which env, seed and player, and what it raised.

    The original exception is the ``__cause__`` (its traceback names the env's file and line).
    """

    def __init__(self, env_id: str, seed: int, player: str, error: BaseException) -> None:
        self.env_id, self.seed, self.player, self.error = env_id, seed, player, error
        super().__init__(
            f"{env_id} raised {type(error).__name__}: {' '.join(str(error).split())[:300]} "
            f"in an episode of its {PLAYER_NAMES.get(player, player)} (seed {seed}){_where(error)}"
        )


def _where(error: BaseException) -> str:
    """`` (at file:line)``: the innermost frame the exception passed through, or nothing."""
    import traceback

    frames = traceback.extract_tb(error.__traceback__)
    return f" (at {frames[-1].filename}:{frames[-1].lineno})" if frames else ""


def demonstrator_problem(noise: float, expert_share: float, other_player: str) -> str | None:
    """What is wrong with a demonstrator mix (turngym.warm_start's three keys), or None."""
    if not 0.0 <= noise < 1.0:
        return f"turngym.warm_start.expert_noise must be in [0, 1), got {noise!r}"
    if not 0.0 < expert_share <= 1.0:
        return f"turngym.warm_start.expert_share must be in (0, 1], got {expert_share!r}"
    if other_player not in OTHER_PLAYERS:
        return (
            f"turngym.warm_start.other_player must be one of {', '.join(OTHER_PLAYERS)}, got {other_player!r}"
        )
    return None


def play_episode(
    env_id: str, env_kwargs: dict, seed: int, move: Callable[[Any], str], max_turns: int
) -> Demo:
    """Play one episode, `move(env.unwrapped)` choosing each reply: (messages, tool schemas, total reward)."""
    import envs

    env = envs.make(env_id, **env_kwargs)
    try:
        messages, _ = env.reset(seed=seed)
        convo = [dict(m) for m in messages]
        tools = list(env.tool_schemas)
        total = 0.0
        for _ in range(max_turns):
            action = move(env.unwrapped)
            convo.append({"role": "assistant", "content": action})
            observation, reward, terminated, truncated, _ = env.step(action)
            total += float(reward)
            if terminated or truncated:
                break
            convo.extend(dict(m) for m in observation)
        return convo, tools, total
    finally:
        env.close()


def expert_episode(env_id: str, env_kwargs: dict, seed: int, max_turns: int = 32, noise: float = 0.0) -> Demo:
    """Play one episode with the env's scripted expert: (messages, tool schemas, total reward).

    With `noise` > 0 the demonstrator is epsilon-greedy: each move is the env's `random_action`
    with that probability (drawn from a generator seeded by `seed`, so demos are reproducible).
    """
    from envs.baselines.baseline_players import random_move

    rng = random.Random(seed)

    def move(game: Any) -> str:
        if noise and rng.random() < noise:
            return random_move(game, rng)
        return game.expert_action()

    return play_episode(env_id, env_kwargs, seed, move, max_turns)


def talker_episode(env_id: str, env_kwargs: dict, seed: int) -> Demo:
    """An episode of a player who answers every turn with `TALK_REPLY`: (messages, tool schemas, total reward)."""
    return play_episode(env_id, env_kwargs, seed, lambda game: TALK_REPLY, TALK_TURNS)


def _sft_message(message: dict) -> dict[str, str]:
    """A message reduced to role and content: parquet needs one schema for every row."""
    return {"role": str(message["role"]), "content": str(message.get("content") or "")}


def write_demonstrations(
    entries: list[dict],
    path: str | Path,
    episodes: int,
    seed: int,
    with_tools: bool = True,
    noise: float = 0.0,
    expert_share: float = 1.0,
    other_player: str = "random",
) -> dict[str, Any]:
    """Write `episodes` expert conversations (envs drawn from the mixture `entries`) to parquet.

    Only `expert_share` of the episodes, spread evenly, are the expert's. `other_player` plays the
    rest: "random" (the env's random_action on every move) or "talk" (`talker_episode`).

    Raises:
        DemoEpisodeError: an env raised while an episode was played (nothing is written then).
    """
    problem = demonstrator_problem(noise, expert_share, other_player)
    if problem:
        raise ValueError(problem)
    import pandas as pd

    from rollout.episode_kind import EpisodeKind
    from trainer.data.datasets import assign_envs

    rows, returns, expert_episodes = [], [], 0
    for index, entry in enumerate(assign_envs(entries, episodes, seed=seed)):
        # Evenly spread rather than drawn: the count is exact for any number of episodes.
        by_expert = math.floor((index + 1) * expert_share) > math.floor(index * expert_share)
        expert_episodes += by_expert
        kind = EpisodeKind.from_entry(entry)
        kwargs = dict(kind.kwargs)
        player = "expert" if by_expert else other_player
        try:
            if by_expert:
                convo, tools, total = expert_episode(kind.env_id, kwargs, seed + index, noise=noise)
            elif other_player == "random":  # noise 1: every move is random_action
                convo, tools, total = expert_episode(kind.env_id, kwargs, seed + index, noise=1.0)
            else:
                convo, tools, total = talker_episode(kind.env_id, kwargs, seed + index)
        except Exception as exc:  # the env's own bug: named with its seed and player, the traceback kept
            raise DemoEpisodeError(kind.env_id, seed + index, player, exc) from exc
        rows.append(
            {
                "messages": [_sft_message(m) for m in convo],
                # JSON text: parquet would merge the schemas of different tools into one struct
                # (adding null fields); trainer.warm_start.expert_sft_dataset decodes it.
                "tools": json.dumps(tools) if with_tools and tools else None,
                "env_id": kind.env_id,
                "seed": seed + index,
            }
        )
        returns.append(total)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_parquet(path)
    return {
        "episodes": len(rows),
        "expert_noise": noise,
        "expert_episodes": expert_episodes,
        "other_player": other_player,
        "expert_mean_return": sum(returns) / max(1, len(returns)),
    }
