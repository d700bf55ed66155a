"""`turngym.env_servers` checked before a run starts: every server probed once, in one line each.

No live server is a ConfigError (exit 2) before Ray starts; a server down while others answer is one
warning line, and the run starts on the others (the pool takes the server back when it answers).
"""

from __future__ import annotations

import sys

from omegaconf import DictConfig, OmegaConf

from trainer.checks.config_error import ConfigError


def check_env_servers(cfg: DictConfig) -> None:
    """Probe `turngym.env_servers` (GET /health); ConfigError when none answers or an entry is no URL.

    Args:
        cfg: the composed run config.
    """
    servers = cfg.turngym.get("env_servers")
    if not servers:
        return
    # One URL given without brackets is a list of one.
    servers = [servers] if isinstance(servers, str) else OmegaConf.to_container(servers)
    from envs.remote.pool import EnvServerPool

    try:
        pool = EnvServerPool(servers)
    except ValueError:
        raise ConfigError(
            f"turngym.env_servers={servers}: give a list of env server URLs, e.g. "
            "turngym.env_servers=[http://127.0.0.1:8000,http://127.0.0.1:8001]"
        ) from None
    timeout = cfg.turngym.get("env_server_timeout_s")
    if timeout is not None and not float(timeout) > 0:
        raise ConfigError(f"turngym.env_server_timeout_s must be a number of seconds > 0, got {timeout}")
    live = [url for url in pool.urls if pool.check(url)]
    if not live:
        raise ConfigError(f"turngym.env_servers: {pool.none_live_message()}")
    for url in pool.urls:
        if url not in live:
            print(
                f"[turngym] env server {url} is down ({pool.servers[url].reason}); starting on the other "
                f"{len(live)}, it rejoins when it answers",
                file=sys.stderr,
                flush=True,
            )
