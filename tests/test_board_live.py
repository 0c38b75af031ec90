"""The live hub: one poller for every open page, stopped when none listens."""

from __future__ import annotations

import asyncio

from todoledger.web.live import Hub


def test_one_poller_serves_every_page_and_stops_with_the_last() -> None:
    value = [1]
    active = [0, 0]  # reads running now, most at once

    def read() -> int:
        active[0] += 1
        active[1] = max(active[1], active[0])
        active[0] -= 1
        return value[0]

    async def main() -> None:
        hub = Hub(read, interval=0.001)
        pages = [hub.subscribe() for _ in range(5)]
        firsts = await asyncio.gather(*(anext(p) for p in pages))
        assert firsts == [1] * 5
        task = hub.task
        value[0] = 2
        assert await asyncio.gather(*(anext(p) for p in pages)) == [2] * 5
        assert hub.task is task  # the same single poller throughout
        for p in pages:
            await p.aclose()
        assert hub.task is None and not hub.queues

    asyncio.run(main())
    assert active[1] == 1  # never two reads of the ledger at once
