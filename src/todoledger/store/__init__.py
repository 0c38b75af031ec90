"""Storage: where the ledger lives, its backends (SQLite, PostgreSQL behind one protocol) and every query."""
