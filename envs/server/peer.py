"""Who a connection or a request is from, for the caps per client: its IP, an IPv6 peer's /64.

Not the token: a server has one, shared by all its clients, so it cannot tell them apart. An IPv6 host
usually holds a whole /64, so that is one client. `X-Forwarded-For` names a client only behind a proxy
the operator trusts (`turngym.serving.trusted_proxy`); what reaches here is then already that client.
"""

from __future__ import annotations

import ipaddress
from typing import Any


def peer_key(address: Any) -> str:
    """The client of a socket address (`getpeername()`, or a (host, port) pair).

    Example:
        >>> peer_key(("10.0.0.7", 5000)), peer_key(("2001:db8::1:2", 5000, 0, 0)), peer_key("")
        ('10.0.0.7', '2001:db8::/64', 'unknown')
        >>> peer_key(("::ffff:10.0.0.7", 5000, 0, 0))
        '10.0.0.7'
    """
    host = address[0] if isinstance(address, (tuple, list)) and address else "unknown"
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return str(host)
    if ip.version == 6:
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return str(host)
