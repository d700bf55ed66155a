"""collect: run many episodes concurrently against one engine and return their trajectories."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Callable
from typing import Any

from envs.run_sync import run_sync
from rollout.episode import EpisodeConfig, run_episode
from rollout.trajectory import Trajectory


class TrajectoryBatch(list):
    """The kept trajectories (a list) plus `.failed`: episodes left out because they failed."""

    def __init__(self, items=(), failed: list[Trajectory] | None = None):
        super().__init__(items)
        self.failed: list[Trajectory] = list(failed or [])


def make_env(env: Any, env_kwargs: dict[str, Any] | None = None) -> Any:
    """A fresh env from an id (via `envs.make`), a factory, or a gym EnvSpec-like id string."""
    if isinstance(env, str):
        import envs

        return envs.make(env, **(env_kwargs or {}))
    if callable(env):
        return env(**(env_kwargs or {}))
    raise TypeError("env must be an env id or a callable returning a fresh env (one env per episode)")


async def acollect(
    env: str | Callable[..., Any],
    engine: Any,
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
    """Async `collect`: episodes i*group_size..(i+1)*group_size-1 share seed `seed + i` and a group uid."""
    env_id = env if isinstance(env, str) else getattr(env, "__name__", None)
    sem = asyncio.Semaphore(max(1, concurrency))
    groups = [uuid.uuid4().hex for _ in range((n_episodes + group_size - 1) // group_size)]

    async def one(k: int) -> Trajectory:
        g = k // group_size
        async with sem:
            try:
                instance = make_env(env, env_kwargs)
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
    env: str | Callable[..., Any],
    engine: Any,
    tokenizer: Any,
    n_episodes: int,
    group_size: int = 1,
    concurrency: int = 64,
    **kwargs: Any,
) -> list[Trajectory]:
    """Run `n_episodes` (one fresh env each; seeds per group) and return the successful trajectories.

    Failed episodes (engine errors after retries, prompt too long, env exceptions) are left out; the
    returned list keeps them in `.failed` and `summarize(batch)["failed_episodes"]` counts them.
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
    return out
