"""`SharedLedger`: the project's ledger for a server's many threads (MCP over
HTTP, the board), a `Ledger` per call on a pool of connections."""

from __future__ import annotations

from todoledger.core.scoped import contextmanager
from todoledger.ledger.ledger import Ledger

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

    from todoledger.store.base import SharedStore
    from todoledger.tokens import Holder


class SharedLedger:
    """The project's ledger for a server's many threads (MCP over HTTP, the
    board): each call takes a `session` and reads or writes through the
    Ledger it gives. On PostgreSQL the calls run side by side on a pool of up
    to `pool_size` connections; on SQLite they take turns on one connection.
    Opened at the first call (an unreachable server fails that call, and the
    next one tries again)."""

    def __init__(
        self, cwd: str | Path | None = None, *, pool_size: int | None = None, busy_ms: int | None = None
    ) -> None:
        self.cwd = cwd
        self.pool_size = pool_size
        self.busy_ms = busy_ms
        self._shared: SharedStore | None = None
        import threading  # only servers share a ledger: the agent verbs never load threading

        self._opening = threading.Lock()

    def _open(self) -> SharedStore:
        with self._opening:
            if self._shared is None:
                from todoledger.store.locate import ledger_file
                from todoledger.store.open import open_shared

                self._shared = open_shared(
                    lambda: ledger_file(self.cwd), pool_size=self.pool_size, busy_ms=self.busy_ms
                )
            return self._shared

    @contextmanager
    def session(
        self, *, run_checks: bool = True, override: str | None = None, route: str = "call"
    ) -> Iterator[Callable[[bool], Ledger]]:
        """A getter of this call's Ledger (True: to write). Until a SQLite
        ledger exists, reads see it empty and create nothing. `override` is how
        this interface tells its users to force past a failing gate. The call's
        writes carry one idempotency key, named by its `route` (`mcp`, `web`)."""
        from todoledger.ledger.retry import new_key

        key = new_key(route)
        made: dict[int, Ledger] = {}
        with self._open().session() as get:

            def ledger(write: bool) -> Ledger:
                store, target = get(write)
                found = made.get(id(store))
                if found is None:
                    found = made[id(store)] = Ledger(target, store=store, key=key)
                    found.run_checks = run_checks
                    if override is not None:
                        found.override = override
                return found

            yield ledger

    def token_holder(self, token: str) -> Holder | None:
        """Who holds `token`, if a person registered it in this ledger (`Ledger.token_holder`)."""
        with self.session() as ledger:
            return ledger(False).token_holder(token)

    def close(self) -> None:
        with self._opening:
            if self._shared is not None:
                self._shared.close()
                self._shared = None
