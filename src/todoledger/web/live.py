"""Live updates: one poller per server reads the ledger's change counter and
wakes every open page (server-sent events); no page polls the ledger itself.
Open streams are bounded (`Streams`): a client that opened 1,500 held as
many tasks and sockets for as long as it liked."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable

from starlette.concurrency import run_in_threadpool

POLL_SECONDS = 0.04  # well inside the 250 ms a change may take to show
KEEPALIVE_SECONDS = 15.0
# A person has a few board tabs open; more from one address is a loop or an attack.
STREAMS_PER_CLIENT = 16
MAX_STREAMS = 256
RETRY_SECONDS = 30


class Streams:
    """The open event streams, per client (its address) and in all: `open`
    refuses one beyond either bound with the status and the line to answer."""

    def __init__(self, per_client: int = STREAMS_PER_CLIENT, total: int = MAX_STREAMS) -> None:
        self.per_client = per_client
        self.total = total
        self.by_client: dict[str, int] = {}

    def open(self, client: str) -> tuple[int, str] | None:
        """Count a new stream of `client`, or (status, why) when it may not have one."""
        held = self.by_client.get(client, 0)
        if held >= self.per_client:
            return 429, (
                f"{client or 'this client'} already has {held} open event streams (the limit):"
                " close a board tab"
            )
        if sum(self.by_client.values()) >= self.total:
            return 503, f"the server already serves {self.total} event streams (the limit): try again later"
        self.by_client[client] = held + 1
        return None

    def close(self, client: str) -> None:
        held = self.by_client.get(client, 0) - 1
        if held > 0:
            self.by_client[client] = held
        else:
            self.by_client.pop(client, None)


class Hub:
    """Shares one poll of `read` (a number that grows with every change) among
    all subscribers; the poller runs only while someone listens."""

    def __init__(self, read: Callable[[], int], interval: float = POLL_SECONDS) -> None:
        self.read = read
        self.interval = interval
        self.last = -1
        self.queues: set[asyncio.Queue[int]] = set()
        self.task: asyncio.Task[None] | None = None

    async def _poll(self) -> None:
        while self.queues:
            try:
                value = await run_in_threadpool(self.read)
            except Exception:  # a busy or briefly locked ledger: try again next tick
                value = self.last
            if value != self.last:
                self.last = value
                for queue in list(self.queues):
                    queue.put_nowait(value)
            await asyncio.sleep(self.interval)
        self.task = None

    async def subscribe(self) -> AsyncIterator[int]:
        queue: asyncio.Queue[int] = asyncio.Queue()
        self.queues.add(queue)
        if self.task is None:
            self.task = asyncio.create_task(self._poll())
        elif self.last >= 0:
            queue.put_nowait(self.last)
        try:
            while True:
                try:
                    yield await asyncio.wait_for(queue.get(), KEEPALIVE_SECONDS)
                except TimeoutError:
                    yield -1  # a keep-alive: proxies close silent streams
        finally:
            self.queues.discard(queue)
            if not self.queues and self.task is not None:
                self.task.cancel()
                with contextlib.suppress(BaseException):
                    await self.task
                self.task = None

    async def stream(self) -> AsyncIterator[str]:
        """The event stream's text: `data: <change>` per change."""
        yield "retry: 1000\n\n"
        async for value in self.subscribe():
            yield ": keep-alive\n\n" if value < 0 else f"data: {value}\n\n"
