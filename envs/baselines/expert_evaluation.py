"""Run the scripted experts over registered envs and summarise success, return and turns."""

from __future__ import annotations

from dataclasses import dataclass

import envs


@dataclass
class ExpertSummary:
    """One env at one difficulty: how the scripted expert fared over `episodes` seeds."""

    env_id: str
    difficulty: str
    episodes: int
    success_rate: float
    mean_return: float
    mean_turns: float


def evaluate_expert(
    env_id: str, episodes: int, difficulty: str | None = None, seed: int = 0
) -> ExpertSummary:
    """Play `episodes` seeded episodes with the env's scripted expert."""
    kwargs = {"difficulty": difficulty} if difficulty else {}
    env = envs.make(env_id, **kwargs)
    successes, returns, turns = 0, 0.0, 0
    for i in range(episodes):
        env.reset(seed=seed + i)
        info: dict = {}
        for _ in range(1000):
            _, reward, terminated, truncated, info = env.step(env.expert_action())
            returns += reward
            turns += 1
            if terminated or truncated:
                break
        successes += bool(info.get("success"))
    env.close()
    shown = difficulty or getattr(env.unwrapped, "difficulty", "-")
    return ExpertSummary(env_id, shown, episodes, successes / episodes, returns / episodes, turns / episodes)


def evaluate_experts(
    category: str | None, episodes: int, left_out: list[str] | None = None
) -> list[ExpertSummary]:
    """Every env of `category` (all when None) that has an expert, at each of its difficulties.

    Args:
        category: only envs of this category; None for all.
        episodes: seeds per env and difficulty.
        left_out: when given, the ids of the envs without a scripted expert are appended to it, so a
            caller can say which envs the table leaves out.

    Returns:
        One summary per env and difficulty the expert played.
    """
    from tqdm import tqdm

    jobs = []
    for spec in envs.list_envs(category):
        env_class = spec.load()
        difficulties = list(getattr(env_class, "difficulties", {}) or [None])
        jobs.extend((spec.id, d) for d in difficulties)
    summaries = []
    for env_id, difficulty in tqdm(jobs, desc="expert evaluation", unit="env"):
        try:
            summaries.append(evaluate_expert(env_id, episodes, difficulty))
        except NotImplementedError:
            if left_out is not None and env_id not in left_out:
                left_out.append(env_id)
    return summaries


def left_out_line(left_out: list[str], shown: int = 6) -> str:
    """One line naming the envs without a scripted expert (the table leaves them out); "" for none."""
    if not left_out:
        return ""
    names = ", ".join(left_out[:shown]) + (
        f" and {len(left_out) - shown} more" if len(left_out) > shown else ""
    )
    verb = "has" if len(left_out) == 1 else "have"
    return f"not in the table: {len(left_out)} env{'s' if len(left_out) != 1 else ''} {verb} no scripted expert ({names})"


def format_table(summaries: list[ExpertSummary]) -> str:
    """A plain-text table of summaries."""
    header = f"{'env':<22} {'difficulty':<10} {'episodes':>8} {'success':>8} {'return':>8} {'turns':>6}"
    rows = [header, "-" * len(header)]
    for s in summaries:
        rows.append(
            f"{s.env_id:<22} {s.difficulty:<10} {s.episodes:>8} {s.success_rate:>8.2f} "
            f"{s.mean_return:>8.3f} {s.mean_turns:>6.1f}"
        )
    return "\n".join(rows)
