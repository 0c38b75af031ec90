"""A second try for a call whose connection the server closed, and the keys that make it safe (issue 30).

A long-lived process (a Python `Ledger`, a lean verb's or hook's open ledger)
holds a connection; PostgreSQL restarts; the next call fails with "server
closed the connection unexpectedly". Each public method of `Ledger` is
wrapped here: on a lost connection (`ConnectionLost`) the store makes a new
one and the call runs once more, where that cannot apply anything twice:

- a call that began no write transaction (a read): always;
- a call that did, only with an idempotency key (`Ledger.keyed`): its first
  attempt's commit may have landed before the reply was lost, and then the
  retry finds the key in the ledger and applies nothing (ledger/unit.py). A
  call of several transactions (`done`: its metrics, then its completion) goes
  on past the parts that landed (run again and rolled back) to those that did
  not, so a lost connection between them never leaves it half done and said done.

A server's calls (`SharedLedger.session`: MCP over HTTP, the board) are retried
alike: their store gives the lost connection back to the pool and borrows a new
one (store/postgres.py `PostgresStore.reconnect`), and every write of the call
carries its route's key.

Not retried: a call inside a transaction the caller holds open (a batch: the
server rolled it back, and only the caller can run it again), a store that
cannot reconnect (a file, a connection whose deadline closed it: the caller's
time is up), and a retry that loses its connection again (once means once).
"""

from __future__ import annotations

import os

from todoledger.core.model import AppliedBefore, ConnectionLost

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

# What is not a call of its own: context managers, the ledger's own lifetime.
NOT_CALLS = frozenset({"batch", "untimed", "bulk", "keyed", "close", "twin", "hold"})
# The verbs that answer with the item they changed: a retry that finds their key answers
# with that item as it is now (what was recorded); any other verb says it was applied before.
ITEM_VERBS = frozenset({"add", "update", "start", "done", "cancel", "restore"})
GENERATOR = 0x20  # a code object's flag (inspect.CO_GENERATOR): a method that yields is no one call


def new_key(route: str) -> str:
    """A fresh idempotency key, named by its route (`hook`, `cli`, `mcp`, `web`...)."""
    return f"{route}:{os.urandom(16).hex()}"


def retried(method: Callable[..., Any]) -> Callable[..., Any]:
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        unit = self._unit
        if unit.calls or unit.in_transaction:  # the outer call (or the caller's transaction) decides
            return method(self, *args, **kwargs)
        unit.calls, unit.wrote, keyed = 1, False, unit.keyed_ops
        try:
            try:
                return method(self, *args, **kwargs)
            except ConnectionLost:
                if (unit.wrote and unit.call_key is None) or not unit.store.reconnect():
                    raise
            # The same keys again: a part found applied is run again and rolled back, and the
            # call goes on to the parts that never landed (a lost connection between two of its
            # transactions left the second undone: answering "applied before" would say it was).
            unit.wrote, unit.keyed_ops = False, keyed
            unit.resuming, unit.found_applied, unit.applied_new = True, [], 0
            try:
                out = method(self, *args, **kwargs)
            finally:
                unit.resuming = False
            if not unit.found_applied or unit.applied_new:
                return out  # nothing had landed, or what had not is applied now
            # All of it had landed: answer as a call applied before does (its first key refuses it
            # before anything runs; a whole-list write answers skipped), never with what the
            # rolled-back run made up.
            unit.keyed_ops = keyed
            try:
                return method(self, *args, **kwargs)
            except AppliedBefore as applied:
                if method.__name__ not in ITEM_VERBS:
                    raise
                found = unit.repo.op_subject(applied.op)
                if found is None or found[1] is None:
                    raise
                return self.get(found[1], found[0])
        finally:
            unit.calls = 0

    call.__name__, call.__qualname__, call.__doc__ = method.__name__, method.__qualname__, method.__doc__
    call.__wrapped__ = method  # type: ignore[attr-defined]
    return call


def retry_calls(cls: type) -> type:
    """Every public method of `cls` and its bases, wrapped by `retried`."""
    seen: set[str] = set()
    for klass in cls.__mro__:
        for name, value in vars(klass).items():
            if name.startswith("_") or name in NOT_CALLS or name in seen:
                continue
            seen.add(name)
            if type(value).__name__ == "function" and not value.__code__.co_flags & GENERATOR:
                setattr(cls, name, retried(value))
    return cls
