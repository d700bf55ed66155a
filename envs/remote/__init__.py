"""Env clients: `RemoteEnv` drives one env on an env server, `PooledRemoteEnv` spreads episodes over several.

`envs.make(env_id, remote="http://host:port", **kwargs)` returns a `RemoteEnv` that behaves like
`envs.make(env_id, **kwargs)`; `remote=[url, ...]` a `PooledRemoteEnv` spreading episodes over several
servers (`envs.remote.pool`); `OpenEnvEnv` plays an OpenEnv server. `envs.remote.wire` is the protocol
both sides speak. HTTP libraries load only when a client is made.

The clients sit below `envs.make` (it returns them); the server (`python -m envs serve`, `envs.server`)
sits above it (it makes every env it serves), so the two live apart and only the wire is shared.
"""

from __future__ import annotations

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


__all__ = ["RemoteEnvError", "make_remote"]
