"""The tokens registered in the ledger: their queries, in portable SQL over any `Store`.

Only the SHA-256 of a secret is stored. The matching events (`token`) go
through `repo.Writes` in the same transaction (`ledger.tokens`).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from todoledger.store.base import Row, Store

_COLUMNS = "hash, name, role, created_by, at"


class TokenRepo:
    def __init__(self, store: Store) -> None:
        self.db = store

    def add(self, digest: str, name: str, role: str, created_by: str, at: str) -> None:
        self.db.execute(
            f"INSERT INTO tokens ({_COLUMNS}) VALUES (?, ?, ?, ?, ?)", (digest, name, role, created_by, at)
        )

    def remove(self, digest: str) -> None:
        self.db.execute("DELETE FROM tokens WHERE hash = ?", (digest,))

    def find(self, digest: str) -> Row | None:
        rows = self.db.query(f"SELECT {_COLUMNS} FROM tokens WHERE hash = ?", (digest,))
        return rows[0] if rows else None

    def all(self) -> list[Row]:
        return self.db.query(f"SELECT {_COLUMNS} FROM tokens ORDER BY at, name, hash")
