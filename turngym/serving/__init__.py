"""One serving layer for every turngym HTTP server: the env server (`python -m envs serve`), the sandbox
server (`python -m tools.sandbox.serve`) and the model server (`python -m turngym.engines.serve`).

The pieces they share, one of each:

- `AdmissionGate` (`gate.py`): a bounded number of requests running and waiting; beyond that
  429 `overloaded` at once, with `Retry-After`.
- `read_body` / `parse_json_object` (`body.py`): 413 `body_too_large` over the size cap (header or
  stream), 408 `body_timeout` for a body that trickles past its deadline, 400 `bad_request` for a
  body that is not one JSON object (or has a field the route does not take).
- `RequestError` / `error_body` (`errors.py`): every failure is `{"error": {"code", "message"}}` with
  one code per condition, the same on all three servers.
- `make_app` / `json_response` / `check_token` (`app.py`): routes with the bearer-token check and JSON
  errors for refusals, unknown routes and bugs; the same token check for a process relaying requests.
- `add_server_args` / `server_settings` / `run_server` (`cli.py`): `--host`, `--port`, `--token`
  (required beyond loopback), the gate and body limits, `--trusted-proxy`, and uvicorn (Ctrl-C ends in
  `KeyboardInterrupt`, so the command prints one line and exits 130).
- `check_trusted_proxies` / `uvicorn_proxy_settings` (`trusted_proxy.py`): `X-Forwarded-For` is
  believed only from a proxy the operator names; uvicorn's own default (trust 127.0.0.1) is turned off.
- `say_when_listening` (`listening.py`): the one line a server prints once it accepts connections.

Framework: all three servers are plain Starlette apps served by uvicorn. FastAPI is built on Starlette;
what it adds (request models, dependency injection, OpenAPI pages) none of the servers used, since
each reads its body by hand to cap its size and time and to answer in its error shape. Starlette alone
is the lighter import (here about 0.3 s and 26 MB against FastAPI's 0.7 s and 41 MB, since FastAPI
pulls in pydantic and its OpenAPI models) and leaves one way of writing a route.

Nothing here imports starlette or uvicorn at import time, so `import envs` and `import tools` stay
light; they load when an app is built or run. `turngym.serving.loopback_server` starts such a server in a child
process on a free loopback port (tests, benches, the sandbox server's own spawn).

Its own package on the ground floor, beside `turngym.common` (the only turngym package it imports, for the CLI
errors): the three servers sit in three layers (tools, envs, rollout), so the layer they share must sit
below all of them, and it is about HTTP, not about tools.
"""

from __future__ import annotations

from turngym.serving.app import check_token, json_response, make_app, plain_json
from turngym.serving.body import parse_json_object, read_body
from turngym.serving.cli import add_server_args, is_loopback, run_server, server_settings
from turngym.serving.errors import RequestError, error_body
from turngym.serving.gate import AdmissionGate

__all__ = [
    "AdmissionGate",
    "RequestError",
    "add_server_args",
    "check_token",
    "error_body",
    "is_loopback",
    "json_response",
    "make_app",
    "parse_json_object",
    "plain_json",
    "read_body",
    "run_server",
    "server_settings",
]
