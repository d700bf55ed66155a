"""A deadline on every request head a uvicorn server reads, the first of a connection and each later one.

uvicorn (0.54) has none: a client that sends its request headers a byte at a time holds the connection,
and on a keep-alive connection the keep-alive timer stops at the first byte of the next request. The
protocol made here (uvicorn's h11 protocol, its parser) starts a timer when a connection opens and when
the first bytes of each later request arrive, stops it once the head is whole, and closes the
connection when the head is not in by then. Every turngym server uses it: the single-process servers
(`turngym.serving.cli.run_server`) and the `--workers` processes, whose front bounds only the first head.
"""

from __future__ import annotations

import asyncio
from typing import Any


def head_deadline_protocol(timeout_s: float) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol with a head deadline of `timeout_s` seconds (pass it as `Config(http=...)`).

    Args:
        timeout_s: Seconds a request's line and headers may take to arrive whole, counted from the
            connection's opening for its first request and from the first byte of each later one.

    Returns:
        The protocol class.

    >>> head_deadline_protocol(5.0).head_timeout_s
    5.0
    """
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class HeadDeadlineProtocol(H11Protocol):
        head_timeout_s = float(timeout_s)
        _head_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm_head()

        def data_received(self, data: bytes) -> None:
            if self.conn.their_state is h11.IDLE and self._head_timer is None:
                self._arm_head()  # the first bytes of a later request on a kept-alive connection
            super().data_received(data)
            if self.conn.their_state is not h11.IDLE:
                self._disarm_head()  # the head is in (or the connection is done with)

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm_head()
            super().connection_lost(exc)

        def _arm_head(self) -> None:
            self._disarm_head()
            self._head_timer = self.loop.call_later(self.head_timeout_s, self._head_expired)

        def _disarm_head(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None

        def _head_expired(self) -> None:
            self._head_timer = None
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                self.transport.close()

    return HeadDeadlineProtocol
