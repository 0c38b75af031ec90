"""Agents' transcripts into the ledger (one plan per session), and the reports of what happened in them."""
