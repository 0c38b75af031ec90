"""The board: server-rendered pages over the ledger, live through server-sent
events, steering through the same service and merge rules as every writer."""
