"""The command-line side of every server: the shared options, their checks, and running the app."""

from __future__ import annotations

import argparse
import ipaddress
import os
from typing import Any

from turngym.common.cli_errors import UsageError, check_port_free
from turngym.serving.trusted_proxy import check_trusted_proxies, uvicorn_proxy_settings


def is_loopback(host: str) -> bool:
    """True when `host` only accepts connections from this machine (127.0.0.0/8, ::1, localhost).

    Example:
        >>> is_loopback("127.0.0.1"), is_loopback("::1"), is_loopback("0.0.0.0"), is_loopback("example.org")
        (True, True, False, False)
    """
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a name or "" may resolve to any interface


def add_server_args(
    parser: argparse.ArgumentParser,
    *,
    port: int,
    token_env: str,
    max_concurrency: int,
    what: str = "requests",
    concurrency_aliases: tuple[str, ...] = (),
    queue_aliases: tuple[str, ...] = (),
) -> None:
    """Add the options every server has: where it listens, who may call it, how much it takes at once.

    `--host`, `--port`, `--token` (required beyond loopback), `--max-concurrency`, `--max-queue`,
    `--max-body-mb`, `--body-timeout`, `--trusted-proxy` and `--log-level`. Check them with
    `server_settings`.

    Args:
        parser: the server's parser.
        port: the default port.
        token_env: the environment variable that may hold the token instead of `--token`.
        max_concurrency: the default of `--max-concurrency`.
        what: what one request is, for the help text (``"runs"``, ``"env calls"``).
        concurrency_aliases: older spellings of `--max-concurrency` still accepted.
        queue_aliases: older spellings of `--max-queue` still accepted.
    """
    parser.add_argument("--host", default="127.0.0.1", help="interface to listen on (default: loopback only)")
    parser.add_argument("--port", type=int, default=port)
    parser.add_argument(
        "--token",
        default=None,
        help=f"require `Authorization: Bearer TOKEN` on every route but /health (or {token_env}); "
        "required when --host is not loopback",
    )
    parser.add_argument(
        "--max-concurrency",
        *concurrency_aliases,
        dest="max_concurrency",
        type=int,
        default=max_concurrency,
        help=f"{what} running at once",
    )
    parser.add_argument(
        "--max-queue",
        *queue_aliases,
        dest="max_queue",
        type=int,
        default=None,
        help=f"{what} waiting beyond those, 429 `overloaded` beyond (default 4 x --max-concurrency)",
    )
    parser.add_argument("--max-body-mb", type=float, default=16.0, help="request bodies over this get 413")
    parser.add_argument(
        "--body-timeout", type=float, default=30.0, help="seconds to receive a request body (408 beyond)"
    )
    parser.add_argument(
        "--trusted-proxy",
        action="append",
        default=[],
        metavar="IP",
        dest="trusted_proxies",
        help="a proxy in front of this server whose X-Forwarded-For names the client (repeatable; an "
        "address or network); without one, clients are told apart by the socket's peer only",
    )
    parser.add_argument("--log-level", default="warning", help="uvicorn's log level")


def server_settings(args: argparse.Namespace, *, token_env: str) -> dict[str, Any]:
    """Check the shared options before anything starts (a model load, a sandbox) and return them.

    Also fills in `args.max_queue` (4 x `--max-concurrency` when not given) and `args.token` (from
    `token_env` when not given).

    Args:
        args: the parsed options (`add_server_args`).
        token_env: the environment variable that may hold the token.

    Returns:
        `token`, `max_concurrency`, `max_queue`, `max_body_bytes`, `body_timeout_s` and
        `trusted_proxies`, checked.

    Raises:
        UsageError: a bad value, a port in use, or an address beyond loopback without a token.
    """
    args.token = args.token or os.environ.get(token_env) or None
    if args.token is None and not is_loopback(args.host):
        raise UsageError(
            f"--host {args.host} reaches beyond this machine: give --token TOKEN (or {token_env}) so only "
            "clients holding it can call this server, or bind 127.0.0.1"
        )
    if args.max_concurrency < 1:
        raise UsageError(f"--max-concurrency must be at least 1, got {args.max_concurrency}")
    if args.max_queue is None:
        args.max_queue = 4 * args.max_concurrency
    if args.max_queue < 0:
        raise UsageError(f"--max-queue must be 0 or more, got {args.max_queue}")
    if not args.max_body_mb > 0:
        raise UsageError(f"--max-body-mb must be > 0, got {args.max_body_mb}")
    if not args.body_timeout > 0:
        raise UsageError(f"--body-timeout must be a number of seconds > 0, got {args.body_timeout}")
    args.trusted_proxies = check_trusted_proxies(getattr(args, "trusted_proxies", None))
    check_port_free(args.host, args.port)  # one line now, rather than uvicorn's log once the app is built
    return {
        "token": args.token,
        "max_concurrency": args.max_concurrency,
        "max_queue": args.max_queue,
        "max_body_bytes": int(args.max_body_mb * 1024 * 1024),
        "body_timeout_s": args.body_timeout,
        "trusted_proxies": args.trusted_proxies,
    }


def run_server(app: Any, args: argparse.Namespace, *, graceful_s: int = 5) -> None:
    """Serve `app` with uvicorn on `args.host:args.port` until interrupted (Ctrl-C: `KeyboardInterrupt`
    once the server has shut down, so `run_cli` prints one line and exits 130).

    Every request head (the first of a connection and each later one on a kept-alive connection) must
    arrive whole within `--body-timeout`, or the connection is closed
    (`turngym.serving.head_deadline`; uvicorn 0.54 has no such deadline). Body deadlines are
    `read_body`'s. `X-Forwarded-For` is believed only from `--trusted-proxy` addresses
    (`turngym.serving.trusted_proxy`).

    Args:
        app: the ASGI app (`make_app`).
        args: the parsed options (`add_server_args`, checked by `server_settings`).
        graceful_s: seconds requests still running at shutdown get before they are cancelled.
    """
    import signal

    import uvicorn

    from turngym.serving.head_deadline import head_deadline_protocol

    class _Server(uvicorn.Server):
        # uvicorn shuts down on Ctrl-C and returns as if nothing happened (exit 0); the signal is kept so
        # the command can end as every turngym command does on Ctrl-C: one line and exit code 130.
        stopped_by: int | None = None

        def handle_exit(self, sig: int, frame: Any) -> None:
            self.stopped_by = sig
            super().handle_exit(sig, frame)

    server = _Server(
        uvicorn.Config(
            app,
            host=args.host,
            port=args.port,
            log_level=args.log_level,
            access_log=False,
            timeout_graceful_shutdown=graceful_s,
            http=head_deadline_protocol(args.body_timeout),
            **uvicorn_proxy_settings(check_trusted_proxies(getattr(args, "trusted_proxies", None))),
        )
    )
    server.run()
    if server.stopped_by == signal.SIGINT:
        raise KeyboardInterrupt
