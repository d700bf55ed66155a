"""Envs as services: `python -m envs serve` serves every registered env over HTTP; `RemoteEnv` drives one.

`envs.make(env_id, remote="http://host:port", **kwargs)` returns a `RemoteEnv` that behaves like
`envs.make(env_id, **kwargs)`; `remote=[url, ...]` a `PooledRemoteEnv` spreading episodes over several
servers (`envs.remote.pool`). HTTP libraries load only when a server or client is made.
"""

from __future__ import annotations

import argparse
from typing import Any

from envs.remote.wire import RemoteEnvError


def make_remote(
    env_id: str,
    *,
    remote: str | list[str],
    remote_token: str | None = None,
    remote_timeout_s: float | None = None,
    **kwargs: Any,
):
    """A `RemoteEnv` for `env_id` on the server at `remote` (what `envs.make(..., remote=url)` returns).

    `remote=[url, ...]` gives a `PooledRemoteEnv` on the least-loaded live server of the list, replayed on
    another if its server dies. `remote_timeout_s` bounds each request (a hung server fails the call).
    """
    if isinstance(remote, list | tuple):
        from envs.remote.pooled_env import PooledRemoteEnv

        return PooledRemoteEnv(env_id, remote, token=remote_token, timeout_s=remote_timeout_s, **kwargs)
    from envs.remote.client import RemoteEnv

    if remote_timeout_s is not None:
        kwargs["timeout_s"] = remote_timeout_s
    if not isinstance(remote, str) or not remote.startswith(("http://", "https://")):
        raise ValueError(f"remote= must be the env server's URL (http://host:port), got {remote!r}")
    return RemoteEnv(env_id, remote, token=remote_token, **kwargs)


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    """The `serve` subcommand's options: the shared server options (`serving`) and the env ones."""
    from serving import add_server_args

    add_server_args(parser, port=8000, token_env="TURNGYM_ENV_TOKEN", max_concurrency=64, what="env calls")
    parser.add_argument("--max-sessions", type=int, default=256, help="open sessions at most (503 beyond)")
    parser.add_argument(
        "--max-sessions-per-client",
        type=int,
        default=None,
        help="open sessions at most for one client, by peer address (429 beyond; default half of "
        "--max-sessions); a trainer that has the server to itself may take all: set it to --max-sessions",
    )
    parser.add_argument(
        "--idle-timeout",
        type=float,
        default=600.0,
        help="seconds before an idle session is closed and its env released",
    )
    parser.add_argument(
        "--env-kwargs",
        action="append",
        default=[],
        metavar="ID:KEY=VALUE",
        help="a kwarg the operator sets for every session of env ID, which clients cannot change, e.g. "
        "code-sandbox-v0:isolation=bwrap (VALUE parsed as JSON when possible); repeatable",
    )
    parser.add_argument(
        "--env-config",
        default=None,
        metavar="FILE",
        help="YAML or JSON mapping env id -> {kwarg: value}, as --env-kwargs (which override it)",
    )


__all__ = ["RemoteEnvError", "add_serve_arguments", "make_remote"]
