"""The trainer's env servers (`turngym.env_servers`): where the agent loop plays, and what a move cost.

With servers listed, every episode is made with `envs.make(id, remote=[...])` (a `PooledRemoteEnv`): it
plays on the least-loaded live server, and is replayed from its seed on another if its server dies or
hangs past `turngym.env_server_timeout_s`. `failover_fields` is what the episode's row then reports.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rollout.episode_result import EpisodeResult

#: extra_fields keys an episode reports: how often it moved server, whether it was replayed, and why
#: (owned by rollout/episode_result.py; these names stay for their readers).
MOVES_KEY = EpisodeResult.ENV_MOVES
REPLAYED_KEY = EpisodeResult.REPLAYED
FAILOVER_KEY = EpisodeResult.FAILOVER


def env_server_kwargs(turngym: Mapping[str, Any] | None) -> dict[str, Any]:
    """The `envs.make` kwargs for the servers in the `turngym` config section ({} for local envs).

    Args:
        turngym: the trainer config's `turngym` section (`env_servers`, `env_server_timeout_s`).

    Returns:
        `{"remote": [url, ...], "remote_timeout_s": s}`, or {} when no server is listed.
    """
    servers = (turngym or {}).get("env_servers") or []
    servers = [servers] if isinstance(servers, str) else list(servers)
    if not servers:
        return {}
    kwargs: dict[str, Any] = {"remote": [str(url) for url in servers]}
    timeout = (turngym or {}).get("env_server_timeout_s")
    if timeout is not None:
        kwargs["remote_timeout_s"] = float(timeout)
    return kwargs


def failover_moves(env: Any) -> dict[str, Any]:
    """The episode's server moves as `EpisodeResult` fields: count, replayed or not, each move's reason.

    Args:
        env: the episode's env once it ended (any env; only a `PooledRemoteEnv` ever moves), or None.

    Returns:
        `{"env_moves": int, "replayed": bool, "failover": str}` (0, False, "" for an episode that stayed).

    >>> failover_moves(None)
    {'env_moves': 0, 'replayed': False, 'failover': ''}
    """
    moves = list(getattr(env, "failovers", None) or [])
    return {
        "env_moves": len(moves),
        # Replayed: it moved and reached another server; a move with no server to go to lost the episode.
        "replayed": any(move.get("to") for move in moves),
        "failover": "; ".join(
            f"{move['from']} -> {move.get('to') or 'nowhere'} after {move['replayed_steps']} steps: {move['reason']}"
            for move in moves
        ),
    }


def failover_fields(env: Any) -> dict[str, Any]:
    """The episode's server moves as extra_fields keys (`EpisodeResult.failover_fields`).

    Args:
        env: the episode's env once it ended, or None.

    Returns:
        `{MOVES_KEY: int, REPLAYED_KEY: bool, FAILOVER_KEY: str}` (0, False, "" for an episode that stayed).
    """
    return EpisodeResult(**failover_moves(env)).failover_fields()
