"""Whose `X-Forwarded-For` a server believes: only a proxy the operator names (`--trusted-proxy`).

A server tells its clients apart by the socket's peer (the env server's per-client session cap). uvicorn
by default replaces that peer with `X-Forwarded-For` when the connection comes from 127.0.0.1 (or what
`$FORWARDED_ALLOW_IPS` says), so any local client, SSH tunnel or port-forward could claim to be anyone:
with `--workers 2`, headers such as `not-an-ip-7` took 8 sessions of 8 where one client's cap was 4. The
header is believed here only from the addresses given with `--trusted-proxy`, and never otherwise.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from turngym.common.cli_errors import UsageError


def check_trusted_proxies(values: list[str] | None) -> list[str]:
    """The `--trusted-proxy` values as addresses or networks, checked (one line for a bad one).

    Example:
        >>> check_trusted_proxies(["10.0.0.5", "fd00::/64"])
        ['10.0.0.5', 'fd00::/64']

    Raises:
        UsageError: a value that is no IP address or network (`*` included: name the proxy).
    """
    checked = []
    for value in values or ():
        text = value.strip()
        try:
            network = ipaddress.ip_network(text, strict=False)
        except ValueError:
            raise UsageError(
                f"--trusted-proxy {value!r}: give the IP address (or network) of the proxy in front of this "
                "server, whose X-Forwarded-For is then believed"
            ) from None
        checked.append(str(network.network_address) if network.num_addresses == 1 else str(network))
    return checked


def uvicorn_proxy_settings(trusted: list[str]) -> dict[str, Any]:
    """uvicorn's `proxy_headers` and `forwarded_allow_ips` for `trusted` proxies (none: headers ignored).

    Both are always given: left unset, uvicorn trusts 127.0.0.1 or whatever `$FORWARDED_ALLOW_IPS` says.

    Example:
        >>> uvicorn_proxy_settings([]), uvicorn_proxy_settings(["10.0.0.5"])
        ({'proxy_headers': False, 'forwarded_allow_ips': ''}, {'proxy_headers': True, 'forwarded_allow_ips': '10.0.0.5'})
    """
    return {"proxy_headers": bool(trusted), "forwarded_allow_ips": ",".join(trusted)}
