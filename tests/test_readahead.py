"""`ingest` reading the next transcripts in a helper process while it writes
(ingest/readahead.py): the ledger ends up exactly as a one-process import
leaves it, whether the helper reads some files, all, or dies on the way."""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import PUBLIC_TRANSCRIPTS
from todoledger import Ledger
from todoledger.ingest.calls import Skipped
from todoledger.ingest.importer import ingest
from todoledger.ingest.readahead import ReadAhead
from todoledger.ingest.sources import Source, discover, read_calls

FIXTURES = PUBLIC_TRANSCRIPTS


def corpus(tmp_path: Path) -> Path:
    """Every real transcript, plus a file that is none and one broken line."""
    folder = tmp_path / "corpus"
    shutil.copytree(FIXTURES, folder)
    (folder / "notes.jsonl").write_text("not a transcript\n")
    first = sorted(folder.glob("claude-jsonl__*.jsonl"))[0]
    with first.open("a") as fh:
        fh.write('{"type": "assistant", "message": {"content": [{"type": "tool_use", "name": "TodoWrite"\n')
    return folder


def plans(db: Path | str) -> dict[str, list[tuple[str, str]]]:
    with Ledger(db) as lg:
        return {
            p["plan"]: [(it["content"], it["status"]) for it in lg.show(p["plan"])["items"]]
            for p in lg.plans()
        }


def summary(result: Any) -> tuple[list[dict[str, Any]], dict[str, int], int]:
    return [s.as_dict() for s in result.sessions], result.skipped.as_dict(), result.files


def sources_of(folder: Path) -> list[Source]:
    return list(discover([str(folder)], Skipped()))


def wait_until_the_helper_has_claimed_a_file(ahead: ReadAhead) -> None:
    deadline = time.monotonic() + 60
    while ahead._claimed.value == 0:
        assert time.monotonic() < deadline, "the helper never started"
        time.sleep(0.01)


def test_an_import_with_the_helper_equals_one_without(
    ledger_env: Path | str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = corpus(tmp_path)
    serial_db = tmp_path / "serial.db"
    with Ledger(serial_db) as lg:
        serial = summary(ingest(lg, [str(folder)], read_ahead=False))
    started: list[ReadAhead] = []
    real_init = ReadAhead.__init__

    def init_and_wait(self: ReadAhead, sources: list[Source]) -> None:
        real_init(self, sources)  # these files are small: without the wait this process reads them all
        wait_until_the_helper_has_claimed_a_file(self)
        started.append(self)

    monkeypatch.setattr(ReadAhead, "__init__", init_and_wait)
    with Ledger(ledger_env) as lg:
        helped = summary(ingest(lg, [str(folder)], read_ahead=True))
    assert started and started[0].helped >= 1
    assert serial[0] and serial[1]  # sessions were written, and something was skipped
    assert helped == serial
    assert plans(ledger_env) == plans(serial_db)


def test_the_helper_hands_over_each_file_whole_and_in_order(tmp_path: Path) -> None:
    found = sources_of(corpus(tmp_path))
    assert len(found) >= 4
    expected = []
    for source in found:
        skipped = Skipped()
        expected.append(
            ([(c.session, c.key, c.payload) for c in read_calls(source, skipped)], skipped.as_dict())
        )
    with ReadAhead(found) as ahead:
        wait_until_the_helper_has_claimed_a_file(ahead)
        got = []
        for source in found:
            skipped = Skipped()
            got.append(
                ([(c.session, c.key, c.payload) for c in ahead.calls(source, skipped)], skipped.as_dict())
            )
        helped = ahead.helped
    assert got == expected
    assert helped >= 1


def test_a_helper_that_dies_leaves_the_reading_to_the_writer(ledger_env: Path | str, tmp_path: Path) -> None:
    folder = corpus(tmp_path)
    found = sources_of(folder)
    serial_db = tmp_path / "serial.db"
    with Ledger(serial_db) as lg:
        serial = summary(ingest(lg, [str(folder)], read_ahead=False))
    with ReadAhead(found) as ahead:
        wait_until_the_helper_has_claimed_a_file(ahead)
        ahead._proc.kill()
        ahead._proc.join()
        calls = [list(ahead.calls(s, Skipped())) for s in found]
    assert [len(c) for c in calls] == [len(list(read_calls(s, Skipped()))) for s in found]
    # And through ingest, with the helper killed as soon as it is up.
    real_init = ReadAhead.__init__

    def init_then_kill(self: ReadAhead, sources: list[Source]) -> None:
        real_init(self, sources)
        wait_until_the_helper_has_claimed_a_file(self)
        self._proc.kill()

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ReadAhead, "__init__", init_then_kill)
        with Ledger(ledger_env) as lg:
            killed = summary(ingest(lg, [str(folder)], read_ahead=True))
    assert killed == serial
    assert plans(ledger_env) == plans(serial_db)


def test_the_ingest_command_reads_ahead_where_it_pays_and_the_library_only_when_asked(
    ledger_env: Path | str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from todoledger.cli.cmd_ingest import _run_ingest
    from todoledger.ingest import readahead

    folder = corpus(tmp_path)
    started: list[int] = []
    real_init = ReadAhead.__init__

    def counted(self: ReadAhead, sources: list[Source]) -> None:
        started.append(len(sources))
        real_init(self, sources)

    monkeypatch.setattr(ReadAhead, "__init__", counted)
    monkeypatch.setattr(readahead, "MIN_BYTES", 0)  # the fixtures are small
    monkeypatch.setattr(readahead.os, "cpu_count", lambda: 2)
    with Ledger(tmp_path / "library.db") as lg:
        ingest(lg, [str(folder)])
    assert started == []  # a program calling ingest() may not guard its main module
    with Ledger(ledger_env) as lg:
        _run_ingest(lg, (str(folder),))
    assert started and started[0] >= 4
    monkeypatch.setattr(readahead.os, "cpu_count", lambda: 1)
    with Ledger(tmp_path / "one-core.db") as lg:
        _run_ingest(lg, (str(folder),))
    assert len(started) == 1  # one core: nothing to overlap
