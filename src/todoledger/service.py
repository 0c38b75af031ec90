"""Kept for one release: `todoledger.ledger` replaced this module."""

from todoledger.ledger.ledger import Ledger as Ledger
