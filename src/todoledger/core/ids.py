"""Short item ids that stay unique when several writers add items at once.

Random rather than sequential: two processes never need to agree on a
counter, and the store's primary key catches the rare collision.

The demo and the README examples need the same ids on every run: `seeded()`
(or TODOLEDGER_ID_SEED for a whole process, as the README generator sets it)
draws them from a seeded stream instead. Callers keep their collision
checks, so a seeded stream that meets an id already taken moves on to the
next one, the same way on every run.
"""

from __future__ import annotations

import os

from todoledger.core.scoped import contextmanager

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

# Crockford-style alphabet without look-alikes (i, l, o, u), lowercase for typing.
ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"
ID_LENGTH = 6
SEED_ENV = "TODOLEDGER_ID_SEED"

# 32 symbols: 5 random bits each, from the OS (secrets would cost an import of hashlib).
_draw: Callable[[int], bytes] = os.urandom


def new_id() -> str:
    return "".join(ALPHABET[b & 31] for b in _draw(ID_LENGTH))


def looks_like_id(text: str) -> bool:
    """Whether `text` has the form of an item id (`show` tells ids from plan names by it)."""
    return len(text) == ID_LENGTH and all(ch in ALPHABET for ch in text)


def _stream(seed: str) -> Callable[[int], bytes]:
    import random  # only for reproducible runs: the hook path never pays for it

    return random.Random(seed).randbytes


@contextmanager
def seeded(seed: str) -> Iterator[None]:
    """Draw ids from a stream seeded with `seed` inside the block (not thread-safe:
    for the demo and tests, which run alone)."""
    global _draw
    saved = _draw
    _draw = _stream(seed)
    try:
        yield
    finally:
        _draw = saved


if os.environ.get(SEED_ENV):
    _draw = _stream(os.environ[SEED_ENV])
