"""Each check kind against real local targets: an HTTP server, ports, a folder, commands."""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from todoledger.checks.run import Inputs, run, run_many
from todoledger.core.checkspec import parse


class Health:
    """A real HTTP server on 127.0.0.1:0 whose answer the test sets."""

    def __init__(self) -> None:
        self.status = 200
        self.body = b'{"status": "ok"}'
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(owner.status)
                self.send_header("Content-Length", str(len(owner.body)))
                self.end_headers()
                self.wfile.write(owner.body)

            def log_message(self, *args: object) -> None:
                pass

        self.stopped = False
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/health"

    def stop(self) -> None:
        if self.stopped:
            return
        self.stopped = True
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def health() -> Iterator[Health]:
    server = Health()
    yield server
    server.stop()


def closed_port() -> int:
    """A port that nothing listens on: bound, then released."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def here(tmp_path: Path) -> Inputs:
    return Inputs(cwd=str(tmp_path))


def test_http_answers_200_then_503_then_stops(health: Health, tmp_path: Path) -> None:
    check = parse(health.url, {"expect": '"ok"'})
    first = run(check, here(tmp_path))
    assert (first.result, first.code) == ("holds", 200)
    assert '"status": "ok"' in first.output
    health.status = 503
    second = run(check, here(tmp_path))
    assert (second.result, second.code) == ("fails", 503)
    assert "HTTP 503 (wanted 2xx)" in second.output
    assert run(parse(health.url, {"status": 503}), here(tmp_path)).result == "holds"
    health.status, health.body = 200, b"loading"
    assert run(check, here(tmp_path)).result == "fails"
    health.stop()
    gone = run(parse(health.url, {"timeout": 2}), here(tmp_path))
    assert (gone.result, gone.code) == ("fails", None)
    assert "no answer from" in gone.output


def test_port_open_and_closed(health: Health, tmp_path: Path) -> None:
    assert run(parse(f"port:127.0.0.1:{health.port}"), here(tmp_path)).result == "holds"
    closed = run(parse(f"port:127.0.0.1:{closed_port()}", {"timeout": 2}), here(tmp_path))
    assert closed.result == "fails"
    assert "refused" in closed.output.lower()


def test_disk_holds_for_one_byte_and_fails_beyond_free_space(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    st = os.statvfs(folder)
    free = st.f_bavail * st.f_frsize
    assert run(parse("disk:data>=1"), here(tmp_path)).result == "holds"
    too_much = run(parse(f"disk:data>={free * 2}"), here(tmp_path))
    assert too_much.result == "fails"
    assert "free at data" in too_much.output and f"needs {free * 2}" in too_much.output
    missing = run(parse("disk:nowhere>=1"), here(tmp_path))
    assert missing.result == "error"


def test_command_exit_code_expect_and_output_tail(tmp_path: Path) -> None:
    ok = run(parse("cmd:echo 12 tests passed"), here(tmp_path))
    assert (ok.result, ok.code) == ("holds", 0) and "12 tests passed" in ok.output
    assert run(parse("cmd:echo 3 failed", {"expect": r"\d+ tests passed"}), here(tmp_path)).result == "fails"
    bad = run(parse("cmd:echo nope >&2; exit 3"), here(tmp_path))
    assert (bad.result, bad.code) == ("fails", 3) and "nope" in bad.output
    loud = run(parse("cmd:python3 -c \"print('x' * 100000 + 'END')\""), here(tmp_path))
    assert len(loud.output) <= 2000 and loud.output.endswith("END\n")
    colour = run(parse("cmd:printf '\\033[31mred\\033[0m'"), here(tmp_path))
    assert "\x1b" not in colour.output and "red" in colour.output
    runs_in_cwd = run(parse("cmd:test -d data || mkdir data && ls"), here(tmp_path))
    assert runs_in_cwd.result == "holds" and (tmp_path / "data").is_dir()


def test_command_that_times_out_is_killed_with_its_children(tmp_path: Path) -> None:
    marker = tmp_path / "late"
    slow = run(parse(f"cmd:(sleep 3; touch {marker}) & sleep 30", {"timeout": 0.5}), here(tmp_path))
    assert slow.result == "fails" and "timed out after 0.5 s" in slow.output
    assert slow.duration_ms < 10_000
    threading.Event().wait(3.5)
    assert not marker.exists()  # the background child died with its group


def test_file_exists_nonempty_and_newer(tmp_path: Path) -> None:
    target = tmp_path / "out.bin"
    assert run(parse("file:out.bin"), here(tmp_path)).result == "fails"
    target.write_bytes(b"")
    assert run(parse("file:out.bin"), here(tmp_path)).result == "holds"
    assert run(parse("file:out.bin", {"nonempty": True}), here(tmp_path)).result == "fails"
    target.write_bytes(b"weights")
    written = target.stat().st_mtime
    newer = parse("file:out.bin", {"newer": True})
    assert run(newer, Inputs(cwd=str(tmp_path), since=written - 10)).result == "holds"
    assert run(newer, Inputs(cwd=str(tmp_path), since=written + 10)).result == "fails"
    assert run(newer, Inputs(cwd=str(tmp_path))).result == "error"


def test_metric_against_number_and_baseline(tmp_path: Path) -> None:
    fixed = parse("metric:tok_s>=82")
    assert run(fixed, Inputs(cwd=str(tmp_path), value=82)).result == "holds"
    assert run(fixed, Inputs(cwd=str(tmp_path), value=60)).result == "fails"
    assert run(fixed, Inputs(cwd=str(tmp_path))).result == "error"
    ratio = parse("metric:tok_s>baseline*1.1", {"baseline": "base01"})
    assert run(ratio, Inputs(cwd=str(tmp_path), value=60, baseline=82)).result == "fails"
    assert run(ratio, Inputs(cwd=str(tmp_path), value=100, baseline=82)).result == "holds"
    assert run(ratio, Inputs(cwd=str(tmp_path), value=100)).result == "error"


def test_run_many_reports_each_result(health: Health, tmp_path: Path) -> None:
    jobs = [(n, parse(health.url), here(tmp_path)) for n in range(10)]
    seen: list[int] = []
    out = run_many(jobs, lambda key, outcome: seen.append(key))
    assert sorted(seen) == list(range(10)) and all(o.result == "holds" for o in out.values())
