"""collect / acollect: run many episodes concurrently against one engine and return their trajectories.

(Not `rollout/collect.py`: importing a submodule named like the function it exports rebinds
`rollout.collect` to the module, so `from rollout import collect` stopped being the function.)
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Callable
from typing import Any

from rollout.episode import EpisodeConfig, run_episode, with_policy_as_opponent
from rollout.trajectory import Trajectory, TrajectoryBatch
from turngym.chat.engine import Engine
from turngym.common.run_sync import run_sync

#: What `collect` takes as `env`: an env id, an env made by `envs.make` (copied from its spec), or a
#: factory returning a fresh env.
EnvSource = str | Callable[..., Any] | Any


def env_factory(
    env: EnvSource,
    env_kwargs: dict[str, Any] | None = None,
    with_opponent: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
) -> tuple[Callable[[], Any], str | None]:
    """(a function making one fresh env per episode, the env id) from `env`; TypeError/UnknownEnvError at once.

    `with_opponent` turns each episode's make kwargs into the ones it is made with (the policy as
    `opponent="self"`, `rollout.episode.with_policy_as_opponent`); a factory of your own gets the kwargs
    as they are.
    """
    kwargs = dict(env_kwargs or {})
    per_episode = with_opponent or dict
    if isinstance(env, str):
        import envs

        envs.spec(env)  # an unknown id fails here, naming the closest ones, not as N failed episodes
        return lambda: envs.make(env, **per_episode(kwargs)), env
    from envs.remote.client import RemoteEnv

    if isinstance(getattr(env, "unwrapped", None), RemoteEnv):
        # Its spec is the local one: copies made from it would silently run here, not on the server.
        raise TypeError(
            f"collect got a RemoteEnv ({env.unwrapped.env_id} at {env.unwrapped.url}); pass a function "
            "making one per episode instead, e.g. lambda: envs.make(env_id, remote=url)"
        )
    made_from = getattr(getattr(env, "unwrapped", None), "turngym_spec", None)
    if made_from is not None:
        # An env from `envs.make`: each episode gets its own copy, made the same way. The instance
        # itself is never stepped (episodes run concurrently; one env cannot hold them all).
        import envs

        settings = {"max_turns": made_from.max_turns, "format_penalty": made_from.format_penalty}
        settings.update(made_from.kwargs)
        settings.update(kwargs)
        return lambda: envs.make(made_from.id, **per_episode(settings)), made_from.id
    if _is_env_instance(env):
        raise TypeError(
            f"collect got an env instance ({type(env).__name__}) that was not made by envs.make, so it "
            "cannot be copied for each episode; pass its registered id, or a function returning a fresh env"
        )
    if callable(env):
        return lambda: env(**kwargs), getattr(env, "__name__", None)
    raise TypeError(
        "collect's env must be an env id (e.g. 'guess-number-v0'), an env made by envs.make, or a "
        f"function returning a fresh env; got {type(env).__name__}"
    )


def _is_env_instance(env: Any) -> bool:
    import gymnasium

    if isinstance(env, type):  # an env class is a factory
        return False
    return isinstance(env, gymnasium.Env) or (hasattr(env, "step") and hasattr(env, "reset"))


async def acollect(
    env: EnvSource,
    engine: Engine,
    tokenizer: Any,
    n_episodes: int,
    *,
    group_size: int = 1,
    concurrency: int = 64,
    seed: int = 0,
    env_kwargs: dict[str, Any] | None = None,
    sampling_params: dict[str, Any] | None = None,
    config: EpisodeConfig | None = None,
    on_episode: Callable[[Trajectory], None] | None = None,
    keep_failed: bool = False,
) -> TrajectoryBatch:
    """Async `collect`: episodes i*group_size..(i+1)*group_size-1 share seed `seed + i` and a group uid.

    Args:
        env: An env id, an env made by `envs.make` (each episode plays a fresh copy made the same way),
            or a function returning a fresh env.
        engine: What generates the assistant turns (`HFEngine`, `SGLangEngine`, any `Engine`).
        tokenizer: The model's tokenizer; its chat template renders the conversation.
        n_episodes: How many episodes to run.
        group_size: Episodes per seed (GRPO's group); they share a seed and a group uid.
        concurrency: Episodes in flight at once.
        seed: The first group's seed; group i plays seed `seed + i`.
        env_kwargs: Keyword arguments for each env (`envs.make(id, **env_kwargs)`).
        sampling_params: Passed to every `engine.generate` call (e.g. `max_tokens`, `temperature`).
        config: Per-episode budgets (prompt and response lengths, turn limits); None: the defaults.
        on_episode: Called with each trajectory as its episode ends (progress bars, streaming).
        keep_failed: Keep failed episodes in the returned list too (they are in `.failed` either way).

    Returns:
        The trajectories (successful ones unless `keep_failed`), in episode order, with the failed
        ones in `.failed`.

    Example:
        >>> import asyncio
        >>> from rollout import HFEngine, acollect
        >>> engine = HFEngine()  # the embedded tiny model  # doctest: +SKIP
        >>> batch = asyncio.run(
        ...     acollect("guess-number-v0", engine, engine.tokenizer, 2, sampling_params={"max_tokens": 16})
        ... )  # doctest: +SKIP
        >>> [t.seed for t in batch]  # doctest: +SKIP
        [0, 1]
    """
    new_env, env_id = env_factory(
        env,
        env_kwargs,
        lambda kwargs: with_policy_as_opponent(kwargs, engine, tokenizer, config, sampling_params),
    )
    sem = asyncio.Semaphore(max(1, concurrency))
    groups = [uuid.uuid4().hex for _ in range((n_episodes + group_size - 1) // group_size)]

    async def one(k: int) -> Trajectory:
        g = k // group_size
        async with sem:
            try:
                instance = new_env()
            except Exception as exc:  # one env that cannot be built is one failed episode
                traj = Trajectory(
                    prompt_ids=[], env_id=env_id, seed=seed + g, failed=True, termination="failed"
                )
                traj.error = f"env construction failed: {type(exc).__name__}: {exc}"
                traj.group = groups[g]
                return traj
            try:
                traj = await run_episode(
                    instance,
                    engine,
                    tokenizer,
                    seed=seed + g,
                    sampling_params=sampling_params,
                    config=config,
                    request_id=f"{groups[g]}-{k % group_size}",
                    env_id=env_id,
                )
            finally:
                close = getattr(instance, "close", None)
                if close is not None:
                    with contextlib.suppress(Exception):  # closing must not lose the trajectory
                        close()
        traj.group = groups[g]
        if on_episode is not None:
            on_episode(traj)
        return traj

    trajs = await asyncio.gather(*[one(k) for k in range(n_episodes)])
    failed = [t for t in trajs if t.failed]
    return TrajectoryBatch(trajs if keep_failed else [t for t in trajs if not t.failed], failed=failed)


def collect(
    env: EnvSource,
    engine: Engine,
    tokenizer: Any,
    n_episodes: int,
    group_size: int = 1,
    concurrency: int = 64,
    **kwargs: Any,
) -> TrajectoryBatch:
    """Run `n_episodes` (one fresh env each; seeds per group) and return the successful trajectories.

    `env` is an env id, an env made by `envs.make` (each episode plays a fresh copy made the same
    way), or a function returning a fresh env; anything else raises TypeError before any episode runs.
    Failed episodes (engine errors after retries, prompt too long, env exceptions) are left out; the
    returned list keeps them in `.failed` and `summarize(batch)["failed_episodes"]` counts them.

    Args:
        env: An env id, an env made by `envs.make`, or a function returning a fresh env.
        engine: What generates the assistant turns (`HFEngine`, `SGLangEngine`, any `Engine`).
        tokenizer: The model's tokenizer; its chat template renders the conversation.
        n_episodes: How many episodes to run.
        group_size: Episodes per seed (GRPO's group).
        concurrency: Episodes in flight at once.
        **kwargs: The rest of `acollect`'s options (`seed`, `env_kwargs`, `sampling_params`, `config`,
            `on_episode`, `keep_failed`).

    Returns:
        The successful trajectories, token-exact (prompt ids, response ids, loss mask, logprobs,
        per-turn rewards), with the failed ones in `.failed`.

    Example:
        >>> from rollout import HFEngine, collect, summarize
        >>> engine = HFEngine()  # the embedded tiny model  # doctest: +SKIP
        >>> batch = collect(
        ...     "guess-number-v0", engine, engine.tokenizer, 4, group_size=2,
        ...     env_kwargs={"max_turns": 3}, sampling_params={"max_tokens": 16},
        ... )  # doctest: +SKIP
        >>> len(batch), summarize(batch)["episodes"]  # doctest: +SKIP
        (4, 4)
        >>> traj = batch[0]  # doctest: +SKIP
        >>> len(traj.response_ids) == len(traj.loss_mask) == len(traj.logprobs)  # doctest: +SKIP
        True
    """
    return run_sync(
        acollect(env, engine, tokenizer, n_episodes, group_size=group_size, concurrency=concurrency, **kwargs)
    )


def summarize(trajectories: list[Trajectory], failed: list[Trajectory] | None = None) -> dict[str, float]:
    """Batch metrics: mean reward, success rate, turns, tool calls/errors, parse errors, overflow."""
    import statistics as st

    n = len(trajectories)
    failed = getattr(trajectories, "failed", []) if failed is None else failed
    out: dict[str, float] = {"episodes": n, "failed_episodes": len(failed)}
    if not n:
        return out
    m = [t.metrics for t in trajectories]
    # An episode cut off (budget, overflow, turn limit) before the env judged it is not a success;
    # only an env that ended an episode without saying leaves it out of the rate.
    succ = [bool(t.success) for t in trajectories if t.success is not None or t.termination != "terminated"]
    out.update(
        {
            "reward_mean": st.fmean(t.total_reward for t in trajectories),
            "reward_std": st.pstdev([t.total_reward for t in trajectories]),
            "success_rate": (sum(succ) / len(succ)) if succ else float("nan"),
            "turns_mean": st.fmean(t.num_turns for t in trajectories),
            "tool_calls_mean": st.fmean(x["tool_calls"] for x in m),
            "tool_errors_mean": st.fmean(x["tool_errors"] for x in m),
            "parse_errors_mean": st.fmean(x["parse_errors"] for x in m),
            "format_errors_mean": st.fmean(x["format_errors"] for x in m),
            "overflow_rate": st.fmean(float(x["overflow"]) for x in m),
            "generated_tokens": float(sum(x["generated_tokens"] for x in m)),
            "response_tokens": float(sum(len(t.response_ids) for t in trajectories)),
        }
    )
    for reason in sorted({t.termination for t in trajectories}):
        out[f"termination/{reason}"] = sum(t.termination == reason for t in trajectories) / n
    turns = sum(x["num_turns"] for x in m)
    if turns:
        # Every env: the share of turns whose reply the env could use as an action.
        out["behaviour/readable_turn_rate"] = 1.0 - sum(x["format_errors"] for x in m) / turns
        if any(t.tools for t in trajectories):
            out["behaviour/tool_call_turn_rate"] = (
                sum(sum(1 for turn in t.turns if turn.tool_calls) for t in trajectories) / turns
            )
    env_ids = {t.env_id for t in trajectories}
    if len(env_ids) == 1:
        from envs.baselines.behaviour import behaviour_rates_of, pool_behaviour

        pooled = pool_behaviour([x.get("behaviour") for x in m], behaviour_rates_of(next(iter(env_ids))))
        out.update({f"behaviour/{k}": v for k, v in pooled.items()})
    return out
