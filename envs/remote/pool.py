"""EnvServerPool: several `python -m envs serve` servers used as one, with health checks.

Episodes go to the live server holding the fewest of this process's open sessions (ties in turn), so
each server gets an even share of every process's episodes without the processes talking to each other.
A server is taken out of the pool when a request to it fails at the transport level (refused, reset, timed
out) or its `GET /health` does; it is probed again `recheck_s` later and comes back when it answers.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

from envs.remote.wire import RemoteEnvError

log = logging.getLogger(__name__)


@dataclass
class ServerState:
    """What the pool knows of one server."""

    url: str
    alive: bool | None = None  # None: not probed yet
    open_sessions: int = 0
    checked_at: float = 0.0
    reason: str = ""  # why it is out of the pool


class EnvServerPool:
    """Live env servers, least-loaded first; one pool per distinct server list per process (`server_pool`).

    Args:
        urls: the servers' base URLs (http://host:port), at least one.
        health_timeout_s: seconds a `GET /health` may take before the server counts as down (a hung server).
        recheck_s: seconds a server that was down stays out before it is probed again.
    """

    def __init__(
        self, urls: list[str] | tuple[str, ...], *, health_timeout_s: float = 2.0, recheck_s: float = 2.0
    ):
        urls = check_urls(urls)
        self.servers = {url: ServerState(url) for url in urls}
        self.health_timeout_s, self.recheck_s = health_timeout_s, recheck_s
        self._lock = threading.Lock()
        self._turn = 0
        self._probing: set[str] = set()  # urls a background probe is checking

    @property
    def urls(self) -> list[str]:
        """The servers' URLs, in the order given."""
        return list(self.servers)

    def check(self, url: str) -> bool:
        """Probe one server's `GET /health` now; the pool takes it out or puts it back by the answer.

        Returns:
            Whether the server answered as a healthy turngym env server.
        """
        import httpx

        try:
            response = httpx.get(f"{url}/health", timeout=self.health_timeout_s)
            healthy = response.status_code == 200 and response.json().get("status") == "healthy"
            reason = (
                "" if healthy else f"GET /health answered {response.status_code}, not a turngym env server"
            )
        except (httpx.HTTPError, ValueError, AttributeError) as exc:
            healthy, reason = False, f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        with self._lock:
            self._set(url, healthy, reason)
        return healthy

    def mark_down(self, url: str, reason: str) -> None:
        """Take `url` out of the pool (a request to it failed); it is probed again after `recheck_s`."""
        with self._lock:
            self._set(url, False, reason)

    def _set(self, url: str, alive: bool, reason: str) -> None:
        server = self.servers[url]
        was = server.alive
        server.alive, server.checked_at, server.reason = alive, time.monotonic(), reason
        if was is not False and not alive:
            left = sum(s.alive is not False for s in self.servers.values())
            log.warning(
                f"env server {url} is down ({reason}); out of the pool, {left} of {len(self.servers)} left"
            )
        elif was is False and alive:
            log.warning(f"env server {url} answers again; back in the pool")

    def pick(self, exclude: tuple[str, ...] = ()) -> str:
        """The live server with the fewest open sessions of this process (not one in `exclude`).

        Servers never probed are probed first. A down server whose `recheck_s` has passed is probed in
        a background thread while another server is live (a hung one takes `health_timeout_s` to fail,
        which must not stall the caller), and here, at once, when none is.

        Raises:
            RemoteEnvError: `no_live_server`, one line naming every server and why it is out.
        """
        now = time.monotonic()
        with self._lock:
            candidates = [s for s in self.servers.values() if s.url not in exclude]
            unknown = [s.url for s in candidates if s.alive is None]
            due = [s.url for s in candidates if s.alive is False and now - s.checked_at >= self.recheck_s]
        for url in unknown:
            self.check(url)
        with self._lock:
            live = [s for s in self.servers.values() if s.alive and s.url not in exclude]
        if not live:
            for url in due:
                self.check(url)
        else:
            for url in due:
                self._check_in_background(url)
        with self._lock:
            live = [s for s in self.servers.values() if s.alive and s.url not in exclude]
            if not live:
                raise RemoteEnvError(0, "no_live_server", self.none_live_message(exclude))
            # Ties go round: otherwise the first server would take every episode of a quiet pool.
            self._turn += 1
            order = {s.url: (i - self._turn) % len(self.servers) for i, s in enumerate(self.servers.values())}
            return min(live, key=lambda s: (s.open_sessions, order[s.url])).url

    def _check_in_background(self, url: str) -> None:
        with self._lock:
            if url in self._probing:
                return
            self._probing.add(url)

        def probe() -> None:
            try:
                self.check(url)
            finally:
                with self._lock:
                    self._probing.discard(url)

        threading.Thread(target=probe, name=f"env-server-probe {url}", daemon=True).start()

    def none_live_message(self, exclude: tuple[str, ...] = ()) -> str:
        """One line naming every server and why it is out (for when none is live)."""
        downs = "; ".join(
            f"{s.url} ({'just failed' if s.url in exclude and s.alive else s.reason or 'down'})"
            for s in self.servers.values()
        )
        if len(self.servers) == 1:
            return f"env server {downs} is not reachable; start it (python -m envs serve) or fix the URL"
        return f"all {len(self.servers)} env servers are down: {downs}; start one or fix the URLs"

    def opened(self, url: str) -> None:
        """Count a session opened on `url`."""
        with self._lock:
            self.servers[url].open_sessions += 1

    def closed(self, url: str) -> None:
        """Count a session on `url` closed (or lost with its server)."""
        with self._lock:
            server = self.servers[url]
            server.open_sessions = max(0, server.open_sessions - 1)


def check_urls(urls: object) -> list[str]:
    """The server URLs of `remote=[...]`, each `http(s)://host:port`, duplicates dropped; ValueError otherwise."""
    if isinstance(urls, str) or not isinstance(urls, list | tuple) or not urls:
        raise ValueError(f"remote= must be a server URL or a non-empty list of them, got {urls!r}")
    out: list[str] = []
    for url in urls:
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ValueError(
                f"remote=[...]: every entry must be an env server's URL (http://host:port), got {url!r}"
            )
        url = url.rstrip("/")
        if url not in out:
            out.append(url)
    return out


_POOLS: dict[tuple[str, ...], EnvServerPool] = {}
_POOLS_LOCK = threading.Lock()


def server_pool(urls: list[str] | tuple[str, ...]) -> EnvServerPool:
    """The process's pool for this list of servers (made on first use), so all its episodes share one count."""
    key = tuple(check_urls(urls))
    with _POOLS_LOCK:
        pool = _POOLS.get(key)
        if pool is None:
            pool = _POOLS[key] = EnvServerPool(list(key))
        return pool
