"""Bounds on guessing `serve`'s token: failed logins per client per minute.

A client is its address (`client_key`): every loopback address counts as one
client (127.0.0.2, ::1 and ::ffff:127.0.0.1 are all this machine), and an IPv6
address by its /64 (one host holds a whole /64). Each wrong token it presents (a POST to /login, a
bearer header or the board's cookie) is a failed login; after
`FAILED_LOGINS_PER_MINUTE` of them within a minute, every request of that
client that presents a token is answered 429 with a Retry-After until the
oldest failure is a minute old. The right token is refused too while the
client is held back: an answer that told right from wrong would let the
guessing go on. The clock is injectable (monotonic by default), so tests
count refusals and never wait.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable

FAILED_LOGINS_PER_MINUTE = 10
WINDOW_SECONDS = 60.0
# Clients remembered before those whose failures are all older than a minute are dropped.
TRACKED_CLIENTS = 4096


def client_key(address: str) -> str:
    """The client a failed login is counted against: `loopback`, an IPv6 /64, or the address."""
    import ipaddress

    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip.is_loopback:
        return "loopback"
    if isinstance(ip, ipaddress.IPv6Address):
        return str(ipaddress.IPv6Network((int(ip) >> 64 << 64, 64)))
    return str(ip)


class LoginLimiter:
    def __init__(
        self,
        *,
        limit: int = FAILED_LOGINS_PER_MINUTE,
        window: float = WINDOW_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limit = limit
        self.window = window
        self.clock = clock
        self.failures: dict[str, deque[float]] = {}

    def retry_after(self, client: str) -> int | None:
        """Seconds until `client` may try again, or None when it may now."""
        recent = self._recent(client)
        if len(recent) < self.limit:
            return None
        return max(1, math.ceil(recent[0] + self.window - self.clock()))

    def failed(self, client: str) -> None:
        """One more wrong token from `client`."""
        if client not in self.failures and len(self.failures) >= TRACKED_CLIENTS:
            for known in list(self.failures):
                self._recent(known)
        self.failures.setdefault(client, deque(maxlen=self.limit)).append(self.clock())

    def _recent(self, client: str) -> deque[float]:
        recent = self.failures.get(client, deque())
        cutoff = self.clock() - self.window
        while recent and recent[0] <= cutoff:
            recent.popleft()
        if not recent:
            self.failures.pop(client, None)
        return recent
