"""Episodes of two runs on the same seeds, paired: the k-th episode of (env, settings, seed) in one file with
the other's. Settings are the env's kwargs and the turn cap (``rollout/episode_settings.py``): an episode
played on another difficulty or with other moves is not the same episode, whatever its seed."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from rollout.episode_settings import PlayedUnder, played_under, turn_caps_recorded
from rollout.trajectory import Trajectory

# An episode's verdict: "ok" succeeded, "no" judged and did not, "none" not judged, "failed" never ran.
VERDICTS = ("ok", "no", "none", "failed")


def verdict(t: Trajectory) -> str:
    """What became of an episode: "ok", "no", "none" (the env named no success) or "failed".

    An episode cut off by its budget or turn cap has no verdict of its own (success=None): it did not
    succeed. Only an env that ends without naming success (terminated, success=None) is not judged.

    >>> verdict(Trajectory(prompt_ids=[1], termination="budget"))
    'no'
    """
    if t.failed or t.error:
        return "failed"
    if t.success is True:
        return "ok"
    if t.success is None and t.termination == "terminated":
        return "none"
    return "no"


def pair_key(t: Trajectory, k: int, with_turns: bool = True) -> tuple[PlayedUnder, int | None, int]:
    """The key two runs' episodes are paired on: what it was played under (env id, settings, and the turn
    cap when both files record it), seed, and k (its place among that seed's episodes)."""
    return (played_under(t, with_turns), t.seed if isinstance(t.seed, int) else None, k)


def pair_episodes(
    a: Sequence[Trajectory], b: Sequence[Trajectory]
) -> list[tuple[Trajectory | None, Trajectory | None]]:
    """Pair two runs' episodes on (env id and settings, seed, index within that seed's group).

    Args:
        a: The first run's episodes, in file order.
        b: The second run's episodes, in file order.

    Returns:
        (episode of a, episode of b) in a's order, then b's unpaired episodes; None where a run has
        no episode for the key (another seed, or the same seed played under other settings).

    >>> ts = [Trajectory(prompt_ids=[1], env_id="g", seed=s) for s in (0, 0, 1)]
    >>> [(x is not None, y is not None) for x, y in pair_episodes(ts, ts[:2])]
    [(True, True), (True, True), (True, False)]
    >>> easy = Trajectory(prompt_ids=[1], env_id="g", seed=0)
    >>> easy.env_kwargs = {"difficulty": "easy"}
    >>> [(x is not None, y is not None) for x, y in pair_episodes(ts[:1], [easy])]
    [(True, False), (False, True)]
    """

    turns = turn_caps_recorded(a, b)

    def keyed(run: Sequence[Trajectory]) -> dict[tuple, Trajectory]:
        seen: Counter = Counter()
        out = {}
        for t in run:
            base = pair_key(t, 0, turns)[:2]
            out[(*base, seen[base])] = t
            seen[base] += 1
        return out

    ka, kb = keyed(a), keyed(b)
    order = list(ka) + [k for k in kb if k not in ka]
    return [(ka.get(k), kb.get(k)) for k in order]


def pair_change(a: Trajectory | None, b: Trajectory | None) -> str:
    """How a pair moved: "improved", "regressed", "both-ok", "neither" or "unpaired".

    >>> won, lost = Trajectory([1], success=True), Trajectory([1], success=False)
    >>> pair_change(lost, won), pair_change(won, won), pair_change(won, None)
    ('improved', 'both-ok', 'unpaired')
    """
    if a is None or b is None:
        return "unpaired"
    ok_a, ok_b = verdict(a) == "ok", verdict(b) == "ok"
    if ok_a and ok_b:
        return "both-ok"
    if ok_b:
        return "improved"
    if ok_a:
        return "regressed"
    return "neither"
