"""A payload from a file or stdin, for `write` and `lint` (both CLI paths)."""

from __future__ import annotations

import sys

from todoledger.core.model import MAX_PAYLOAD_BYTES, LedgerError, LimitError


def read_payload(source: str) -> bytes:
    try:
        if source == "-":
            data = sys.stdin.buffer.read(MAX_PAYLOAD_BYTES + 1)
        else:
            with open(source, "rb") as fh:
                data = fh.read(MAX_PAYLOAD_BYTES + 1)
    except OSError as exc:
        raise LedgerError(f"{source}: {exc.strerror}") from None
    if len(data) > MAX_PAYLOAD_BYTES:
        raise LimitError(f"payload is over {MAX_PAYLOAD_BYTES // (1024 * 1024)} MB; the limit is 2 MB")
    return data
