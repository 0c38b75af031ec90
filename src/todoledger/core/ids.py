"""Short item ids that stay unique when several writers add items at once.

Random rather than sequential: two processes never need to agree on a
counter, and the store's primary key catches the rare collision.
"""

from __future__ import annotations

import os

# Crockford-style alphabet without look-alikes (i, l, o, u), lowercase for typing.
ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"
ID_LENGTH = 6


def new_id() -> str:
    # 32 symbols: 5 random bits each, from the OS (secrets would cost an import of hashlib).
    return "".join(ALPHABET[b & 31] for b in os.urandom(ID_LENGTH))
