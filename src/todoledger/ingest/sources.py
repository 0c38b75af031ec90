"""Find transcripts under the paths given and tell their format.

A folder is walked; an opencode storage folder (`session/`, `message/`,
`part/`) is one source, not thousands of files. The format comes from the
content (the first lines), not from the name, so renamed copies work.
"""

from __future__ import annotations

import io
import os
import stat
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import orjson

from todoledger.ingest import claude, codex, gemini, opencode
from todoledger.ingest.calls import Skipped, TodoCall
from todoledger.ingest.lines import BLOCK_BYTES, LineCursor

SNIFF_BYTES = 64 * 1024
SQLITE_MAGIC = b"SQLite format 3\x00"
SUFFIXES = frozenset({".jsonl", ".json", ".db", ".sqlite"})

CLAUDE_SIGNS = (
    b'"parentUuid"',
    b'"leafUuid"',
    b'"isSidechain"',
    b'"file-history-snapshot"',
    b'"queue-operation"',
)
CODEX_SIGNS = (b'"session_meta"', b'"response_item"', b'"turn_context"')


@dataclass
class Source:
    name: str  # what the user gave or what was found, for messages and provenance
    fmt: str  # claude, codex, gemini, gemini-json, opencode-export, opencode-storage, opencode-sqlite
    path: Path | None  # None for stdin
    size: int


def sniff(head: bytes, suffix: str = "") -> str | None:
    """The format of a transcript from its first bytes, or None."""
    if head.startswith(SQLITE_MAGIC):
        return "opencode-sqlite"
    body = head.lstrip()
    if not body.startswith(b"{"):
        return None
    first = body.split(b"\n", 1)[0]
    if b'"projectHash"' in head[:4096] or b'"toolCalls"' in first:
        return "gemini" if _one_line_object(first) else "gemini-json"
    if any(s in head for s in CLAUDE_SIGNS):
        return "claude"
    if any(s in first for s in CODEX_SIGNS) or (b'"instructions"' in first and b'"id"' in first):
        return "codex"
    if b'"info"' in head[:256] and b'"messages"' in head:
        return "opencode-export"
    if suffix == ".jsonl" and b'"sessionId"' in first and b'"message"' in first:
        return "claude"  # a Claude excerpt without the tell-tale fields above
    return None


def _one_line_object(first: bytes) -> bool:
    try:
        return isinstance(orjson.loads(first), dict)
    except orjson.JSONDecodeError:
        return False


def _is_storage(folder: Path) -> bool:
    return (folder / "session").is_dir() and ((folder / "message").is_dir() or (folder / "part").is_dir())


def discover(paths: list[str], skipped: Skipped) -> Iterator[Source]:
    for given in paths:
        if given == "-":
            yield Source("-", "stdin", None, 0)
            continue
        path = Path(given).expanduser()
        if path.is_dir():
            yield from _walk(path, skipped)
        elif path.exists():
            source = _file(path, skipped)
            if source is not None:
                yield source
        else:
            skipped.add("paths that do not exist")


def _walk(root: Path, skipped: Skipped) -> Iterator[Source]:
    if _is_storage(root):
        yield Source(str(root), "opencode-storage", root, 0)
        return
    # A storage folder is one source and is not walked into; everything beside it
    # is (opencode's data folder holds both storage/ and opencode.db).
    for folder, dirs, files in os.walk(root):
        here = Path(folder)
        keep = []
        for d in sorted(dirs):
            if _is_storage(here / d):
                yield Source(str(here / d), "opencode-storage", here / d, 0)
            else:
                keep.append(d)
        dirs[:] = keep
        for name in sorted(files):
            path = here / name
            if path.suffix in SUFFIXES:
                source = _file(path, skipped)
                if source is not None:
                    yield source


def _file(path: Path, skipped: Skipped) -> Source | None:
    try:
        # Only regular files: opening a named pipe waits for a writer forever, and
        # a device or socket is no transcript. Pipes come in through stdin (`-`).
        if not stat.S_ISREG(path.stat().st_mode):
            skipped.add("paths that are not regular files")
            return None
        # O_NONBLOCK: a pipe swapped in after the check still cannot block the open.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                skipped.add("paths that are not regular files")
                return None
            head = fh.read(SNIFF_BYTES)
            size = os.fstat(fh.fileno()).st_size
    except OSError:
        skipped.add("unreadable files")
        return None
    fmt = sniff(head, path.suffix)
    if fmt is None:
        skipped.add("files that are not transcripts")
        return None
    return Source(str(path), fmt, path, size)


def read_calls(source: Source, skipped: Skipped, stdin: IO[bytes] | None = None) -> Iterator[TodoCall]:
    """Every todo call of one source, in transcript order; skips are counted into `skipped`."""
    if source.path is None:
        fh = stdin or sys.stdin.buffer
        fmt: str | None = source.fmt
        if fmt == "stdin":  # not told yet (import_source tells it once, before)
            fmt, fh = open_stdin(fh)
        yield from _stdin(fmt, fh, skipped)
        return
    path = source.path
    if source.fmt == "opencode-storage":
        yield from opencode.read_storage(path, skipped)
    elif source.fmt == "opencode-sqlite":
        yield from opencode.read_sqlite(path, skipped)
    elif source.fmt in ("opencode-export", "gemini-json"):
        if source.size > opencode.MAX_EXPORT_BYTES:
            skipped.add("JSON documents too large to load")
            return
        yield from _document(source.fmt, path.read_bytes(), skipped, path)
    else:
        with path.open("rb") as fh:
            yield from _lines(source.fmt, fh, skipped, path)


def _lines(fmt: str, fh: IO[bytes], skipped: Skipped, path: Path | None) -> Iterator[TodoCall]:
    reader: claude.ClaudeReader | codex.CodexReader | gemini.GeminiReader
    if fmt == "claude":
        reader = claude.ClaudeReader(str(path) if path else "")
    elif fmt == "codex":
        reader = codex.CodexReader(str(path) if path else "")
    else:
        reader = gemini.GeminiReader(path)
    yield from reader.read(fh, LineCursor())
    skipped.counts.update(reader.skipped.counts)


def _document(fmt: str, raw: bytes, skipped: Skipped, path: Path | None) -> Iterator[TodoCall]:
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        skipped.add("files that are not transcripts")
        return
    if fmt == "opencode-export":
        yield from opencode.read_export(data, skipped)
    else:
        reader = gemini.GeminiReader(path)
        yield from reader.read_document(data)
        skipped.counts.update(reader.skipped.counts)


def _stdin(fmt: str | None, fh: IO[bytes], skipped: Skipped) -> Iterator[TodoCall]:
    if fmt is None or fmt == "unknown":
        skipped.add("files that are not transcripts")
        return
    if fmt in ("opencode-export", "gemini-json"):
        yield from _document(fmt, fh.read(opencode.MAX_EXPORT_BYTES + 1), skipped, None)
    elif fmt == "opencode-sqlite":
        skipped.add("SQLite databases on stdin (give the file's path)")
    else:
        yield from _lines(fmt, fh, skipped, None)


def open_stdin(fh: IO[bytes]) -> tuple[str | None, IO[bytes]]:
    """The format of a stream, and the stream again from its first byte.

    `peek` would show only what the pipe has delivered so far, so a slow
    writer would be misread: the head is read for real (a JSONL stream's first
    line tells; a document needs up to SNIFF_BYTES) and put back in front.
    """
    head = fh.readline(SNIFF_BYTES)
    # A live tail may not send more for a while: wait for more only when the first line does not tell.
    fmt = sniff(head, ".jsonl") if head.endswith(b"\n") and _one_line_object(head.strip()) else None
    if fmt is None:
        while len(head) < SNIFF_BYTES:
            more = fh.read(SNIFF_BYTES - len(head))
            if not more:
                break
            head += more
        fmt = sniff(head, ".jsonl")
    return fmt, io.BufferedReader(_Prefixed(head, fh), BLOCK_BYTES)


class _Prefixed(io.RawIOBase):
    """Bytes already read, then the rest of the stream."""

    def __init__(self, head: bytes, rest: IO[bytes]) -> None:
        self._head = memoryview(head)
        self._rest = rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        if self._head:
            n = min(len(view), len(self._head))
            view[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        data = self._rest.read(len(view))
        view[: len(data)] = data
        return len(data)
