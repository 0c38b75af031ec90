"""Find transcripts under the paths given and tell their format.

A folder is walked; an opencode storage folder (`session/`, `message/`,
`part/`) is one source, not thousands of files. The format comes from the
content (the first lines), not from the name, so renamed copies work.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import orjson

from todoledger.ingest import claude, codex, gemini, opencode
from todoledger.ingest.calls import Skipped, TodoCall
from todoledger.ingest.lines import LineCursor

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
        elif path.is_file():
            source = _file(path, skipped)
            if source is not None:
                yield source
        else:
            skipped.add("paths that do not exist")


def _walk(root: Path, skipped: Skipped) -> Iterator[Source]:
    for storage in (root, root / "storage"):
        if _is_storage(storage):
            yield Source(str(storage), "opencode-storage", storage, 0)
            return
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
        with path.open("rb") as fh:
            head = fh.read(SNIFF_BYTES)
        size = path.stat().st_size
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
        yield from _stdin(stdin or sys.stdin.buffer, skipped)
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


def _stdin(fh: IO[bytes], skipped: Skipped) -> Iterator[TodoCall]:
    head = fh.peek(SNIFF_BYTES)[:SNIFF_BYTES] if hasattr(fh, "peek") else b""
    fmt = sniff(head, ".jsonl")
    if fmt is None:
        skipped.add("files that are not transcripts")
        return
    if fmt in ("opencode-export", "gemini-json"):
        yield from _document(fmt, fh.read(opencode.MAX_EXPORT_BYTES + 1), skipped, None)
    elif fmt == "opencode-sqlite":
        skipped.add("SQLite databases on stdin (give the file's path)")
    else:
        yield from _lines(fmt, fh, skipped, None)


def stdin_format(fh: IO[bytes]) -> str:
    head = fh.peek(SNIFF_BYTES)[:SNIFF_BYTES] if hasattr(fh, "peek") else b""
    return sniff(head, ".jsonl") or "unknown"
