"""The env server: `python -m envs serve` serves every registered env over HTTP, one session per episode.

- `app.py`: the sessions, one handler per route, `create_app`, `serve` (`python -m envs.server.app` is
  `python -m envs serve`);
- `workers.py` / `worker.py`: `--workers N`, N server processes behind one port;
- `operator_config.py`: the kwargs only the operator sets (`--env-kwargs`, `--env-config`);
- `openenv_schema.py`: how the session protocol lines up with OpenEnv's, as data for `GET /schema`.

The server sits above `envs.make` (it makes every env it serves); the clients (`envs.remote`) sit below
it, and the two share only the wire (`envs.remote.wire`). The HTTP layer (gate, body limits, token,
error shape, CLI options) is the one every turngym server uses (`turngym.serving`). HTTP libraries load only
when a server is made or run.
"""

from __future__ import annotations

import argparse


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    """The `serve` subcommand's options: the shared server options (`turngym.serving`) and the env ones."""
    from turngym.serving import add_server_args

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
        "--max-connections-per-client",
        type=int,
        default=None,
        help="with --workers: connections one peer address may have waiting for their headers at the "
        "front, and open on each worker (default --max-sessions); more are closed at once (on a worker: 429)",
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


__all__ = ["add_serve_arguments"]
