"""Block-wise reading of JSONL transcripts with a cheap byte pre-filter.

Transcripts are read in 1 MB blocks; each marker is searched over the whole
block at once and only the lines that hold one are cut out and parsed.
Per-line Python work would cost as much as parsing every line, so lines
without a marker are not looked at: "not JSON" is counted among the
candidate lines only.
Readers may `watch` more markers while reading (the id of a call whose
result line is still to come); the rest of the current block is searched
for them too. A last line without a newline is a transcript still being
written: it is left for the next read instead of counted as broken.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import IO, Any

import orjson

from todoledger.ingest.calls import Skipped

BLOCK_BYTES = 1 << 20
# No todo call comes near this; a longer line (an inlined file, a runaway
# output) is counted and passed over so that memory stays bounded.
MAX_LINE_BYTES = 64 << 20


class LineCursor:
    """Where a reader stands in a file: byte offset and line number after the
    last complete line read."""

    def __init__(self, offset: int = 0, line: int = 0) -> None:
        self.offset = offset
        self.line = line


class Scanner:
    def __init__(
        self,
        markers: Sequence[bytes],
        skipped: Skipped,
        cursor: LineCursor | None = None,
        *,
        first_line: bool = False,
    ) -> None:
        # Markers that share their first byte go in one regex, which then runs at
        # memchr speed (Todo|Task); a regex over markers that do not (Todo|Task|
        # ExitPlanMode) would try every position, far slower than this (see bench/bench_ingest.py).
        groups: dict[int, list[bytes]] = {}
        for m in markers:
            groups.setdefault(m[0], []).append(m)
        self.patterns = [
            re.compile(b"|".join(re.escape(m) for m in group)) for group in groups.values() if len(group) > 1
        ]
        self.literals = [group[0] for group in groups.values() if len(group) == 1]
        self.skipped = skipped
        self.cursor = cursor or LineCursor()
        # Formats whose first line names the session (Codex, Gemini) want it whatever it holds.
        self._first = first_line and self.cursor.line == 0
        self._watched: dict[bytes, int] = {}  # marker -> next hit in the block (-1: none left)

    def watch(self, marker: bytes) -> None:
        self._watched[marker] = -2  # not searched yet

    def unwatch(self, marker: bytes) -> None:
        self._watched.pop(marker, None)

    def lines(self, fh: IO[bytes]) -> Iterator[tuple[int, bytes]]:
        """(line number, raw line) for every complete line holding a marker."""
        # The line cut at a block's end, in pieces: a line longer than a block is
        # joined once when its end comes (adding on each block would copy it over
        # and over), and dropped once it passes MAX_LINE_BYTES.
        carry: list[bytes] = []
        size = 0
        # Blocks are read into one buffer: a fresh 1 MB bytes object per read is a fresh
        # allocation whose pages fault in one by one, a good part of the cost of reading
        # (see bench/bench_ingest.py).
        # Whatever outlives the block (the lines yielded, the cut line's pieces) is copied.
        readinto = getattr(fh, "readinto", None)
        buffer = bytearray(BLOCK_BYTES if readinto is not None else 0)
        while True:
            if readinto is not None:
                n = readinto(buffer)
                chunk: bytes | bytearray = buffer if n == BLOCK_BYTES else buffer[:n]
            else:
                chunk = fh.read(BLOCK_BYTES)
                n = len(chunk)
            if not n:
                if size > MAX_LINE_BYTES or any(part.strip() for part in carry):
                    self.skipped.add("unfinished last line")
                return
            end = chunk.rfind(b"\n") + 1
            if not end:
                size += n
                if size <= MAX_LINE_BYTES:
                    carry.append(bytes(chunk))
                else:
                    carry.clear()
                continue
            lo = 0
            if size:  # the line cut at the last block's end: complete it on its own
                lo = chunk.find(b"\n") + 1
                if size + lo > MAX_LINE_BYTES:
                    self._skip_line(size + lo)
                else:
                    carry.append(bytes(chunk[:lo]))
                    line = b"".join(carry)
                    carry.clear()  # the pieces go before the line is read: one copy held, not two
                    yield from self._block(line, 0, None)
            # The block itself is searched in place between offsets: no copy of it is made.
            yield from self._block(chunk, lo, end)
            tail = bytes(chunk[end:])
            carry, size = ([tail] if tail else []), len(tail)

    def _skip_line(self, length: int) -> None:
        self.skipped.add("lines too long to read")
        self._first = False
        self.cursor.offset += length
        self.cursor.line += 1

    def _block(self, block: bytes | bytearray, lo: int, hi: int | None) -> Iterator[tuple[int, bytes]]:
        hi = len(block) if hi is None else hi
        starts = sorted(self._static_hits(block, lo, hi))
        for m in self._watched:
            self._watched[m] = -2
        base_line = self.cursor.line
        counted_to, counted = lo, 0
        pos, i = lo, 0
        while True:
            while i < len(starts) and starts[i] < pos:
                i += 1
            start = starts[i] if i < len(starts) else -1
            for m, hit in self._watched.items():
                if hit == -2 or (hit != -1 and hit < pos):
                    found = block.find(m, pos, hi)
                    hit = self._watched[m] = -1 if found < 0 else max(block.rfind(b"\n", lo, found) + 1, lo)
                if hit >= 0 and (start < 0 or hit < start):
                    start = hit
            if start < 0:
                break
            stop = block.find(b"\n", start, hi) + 1
            counted += count_lines(block, counted_to, start)
            counted_to = start
            self.cursor.line = base_line + counted + 1
            yield self.cursor.line, bytes(block[start:stop])
            pos = stop
        # One pass of newline counting over the block in all: the segments above and the rest here.
        self.cursor.line = base_line + counted + count_lines(block, counted_to, hi)
        self.cursor.offset += hi - lo

    def _static_hits(self, block: bytes | bytearray, lo: int, hi: int) -> set[int]:
        hits: set[int] = set()
        if self._first:
            self._first = False
            hits.add(lo)
        for pattern in self.patterns:
            search = pattern.search
            found = search(block, lo, hi)
            while found is not None:
                at = found.start()
                hits.add(max(block.rfind(b"\n", lo, at) + 1, lo))
                found = search(block, block.find(b"\n", at, hi) + 1, hi)
        for literal in self.literals:  # bytes.find beats a regex on one literal
            at = block.find(literal, lo, hi)
            while at >= 0:
                hits.add(max(block.rfind(b"\n", lo, at) + 1, lo))
                at = block.find(literal, block.find(b"\n", at, hi) + 1, hi)
        return hits


def count_lines(block: bytes | bytearray, lo: int, hi: int) -> int:
    """Newlines in block[lo:hi]. `count` looks at every byte; `find` of one
    byte is memchr, faster over transcripts' long lines (KBs of tool output)
    but a Python call per line: lines that are short on average (below about
    256 bytes) are left to `count` (see bench/bench_ingest.py)."""
    find = block.find
    budget = (hi - lo) >> 8
    n = 0
    at = find(b"\n", lo, hi)
    while at >= 0:
        n += 1
        if n > budget:
            return n + block.count(b"\n", at + 1, hi)
        at = find(b"\n", at + 1, hi)
    return n


def candidate_lines(
    fh: IO[bytes],
    markers: Sequence[bytes],
    skipped: Skipped,
    cursor: LineCursor | None = None,
    *,
    first_line: bool = False,
) -> Iterator[tuple[int, bytes]]:
    return Scanner(markers, skipped, cursor, first_line=first_line).lines(fh)


def load(raw: bytes, skipped: Skipped) -> dict[str, Any] | None:
    """A parsed line, or None (counted) when it is not a JSON object."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        skipped.add("lines that are not JSON")
        return None
    if not isinstance(value, dict):
        skipped.add("lines that are not JSON objects")
        return None
    return value


def text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
