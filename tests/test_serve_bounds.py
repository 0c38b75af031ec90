"""`todoledger serve` bounds what a client may ask of it, against the real
server process: the login body is capped before it is read, wrong tokens are
limited per client, a weak `--token` is refused at start, and the board's
event streams are bounded per client and in all. Refusals are counted, never timed."""

from __future__ import annotations

import socket
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import person_env, todoledger_bin
from tests.test_mcp import TOKEN, free_port, wait_for_port
from todoledger.mcp.http import LOGIN_MAX_BYTES
from todoledger.mcp.limits import FAILED_LOGINS_PER_MINUTE
from todoledger.web.live import MAX_STREAMS, STREAMS_PER_CLIENT


@pytest.fixture
def port(ledger_env: Path) -> Iterator[int]:
    number = free_port()
    proc = subprocess.Popen(
        [todoledger_bin(), "serve", "--port", str(number), "--token", TOKEN],
        env=person_env(ledger_env),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for_port(proc, number)
        yield number
    finally:
        proc.kill()
        proc.wait()


def connect(port: int, source: str = "127.0.0.1") -> socket.socket:
    """A connection from `source` (any 127.x address is this machine, and another client)."""
    conn = socket.create_connection(("127.0.0.1", port), timeout=20, source_address=(source, 0))
    return conn


def head(conn: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """The status, headers and whatever of the body arrived with them."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
    top, _, rest = data.partition(b"\r\n\r\n")
    lines = top.decode("latin-1").split("\r\n")
    headers = dict(line.lower().split(": ", 1) for line in lines[1:] if ": " in line)
    while len(rest) < int(headers.get("content-length", 0)):
        chunk = conn.recv(65536)
        if not chunk:
            break
        rest += chunk
    return int(lines[0].split()[1]), headers, rest


def request(port: int, text: str, source: str = "127.0.0.1") -> tuple[int, dict[str, str], bytes]:
    with connect(port, source) as conn:
        conn.sendall(text.encode())
        return head(conn)


def login(port: int, token: str, source: str = "127.0.0.1") -> int:
    body = f"token={token}"
    return request(
        port,
        f"POST /login HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/x-www-form-urlencoded\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n{body}",
        source,
    )[0]


def test_a_login_body_over_the_cap_is_refused_before_it_is_read(port: int) -> None:
    # Before: the whole body was read first (400 MB raised the server to 463 MB);
    # this client sends none of the 400 MB it announces, and waited for ever.
    with connect(port) as conn:
        conn.sendall(
            f"POST /login HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: {400 << 20}\r\n\r\n".encode()
        )
        status, _, body = head(conn)
    assert status == 413 and f"at most {LOGIN_MAX_BYTES} bytes".encode() in body
    # A chunked body announces no length: it is read up to the cap, and no further.
    with connect(port) as conn:
        conn.sendall(
            f"POST /login HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nTransfer-Encoding: chunked\r\n\r\n".encode()
        )
        chunk = b"token=" + b"x" * (2 * LOGIN_MAX_BYTES)
        conn.sendall(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")  # and never the last chunk
        status, _, body = head(conn)
    assert status == 413 and body.count(b"\n") == 0
    assert login(port, TOKEN) == 303  # the server still serves


def test_wrong_tokens_are_limited_per_client(port: int) -> None:
    # Before: 167 guesses a second, none refused.
    tries = FAILED_LOGINS_PER_MINUTE + 5
    statuses = Counter(login(port, f"guess-{n:04d}-0123456789abcdef") for n in range(tries))
    assert statuses == {401: FAILED_LOGINS_PER_MINUTE, 429: 5}
    status, headers, body = request(
        port,
        f"POST /login HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 6\r\nConnection: close\r\n\r\ntoken=",
    )
    assert status == 429 and int(headers["retry-after"]) >= 1 and b"too many wrong tokens" in body
    # Held back, the right token is refused too: an answer that told them apart would let guessing go on.
    assert login(port, TOKEN) == 429
    mcp = f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {TOKEN}\r\nConnection: close\r\n\r\n"
    assert request(port, mcp)[0] == 429
    # Every loopback address is this machine, one client (issue 29): another is held back too.
    assert login(port, TOKEN, "127.0.0.2") == 429
    assert request(port, mcp, "127.0.0.3")[0] == 429


@pytest.fixture
def tokenless(ledger_env: Path) -> Iterator[int]:
    """`serve` on loopback without a token, started by a person: it still looks bearer
    tokens up in the ledger's registry."""
    number = free_port()
    proc = subprocess.Popen(
        [todoledger_bin(), "serve", "--port", str(number)],
        env=person_env(ledger_env),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for_port(proc, number)
        yield number
    finally:
        proc.kill()
        proc.wait()


def test_wrong_bearer_tokens_count_on_every_server(tokenless: int) -> None:
    """Before: a server that asked for no token never counted a wrong bearer token, so
    guesses at a person's registered token went on unbounded there."""
    tries = FAILED_LOGINS_PER_MINUTE + 5
    wrong = (
        f"GET /api/plans HTTP/1.1\r\nHost: 127.0.0.1:{tokenless}\r\n"
        "Authorization: Bearer not-the-token-0123456789\r\nConnection: close\r\n\r\n"
    )
    statuses = Counter(request(tokenless, wrong, f"127.0.0.{2 + n % 3}")[0] for n in range(tries))
    assert statuses[429] == 5, statuses


@pytest.mark.parametrize(
    "token",
    [
        "s3cret-tok",  # 10 characters: the kind `--token` took before
        "0123456789abcdef0123456789abcde",  # 31 hex digits: 124 bits
        "abcdefghij-_ABCDEFGHIJ"[:21],  # 21 base64url characters
        "a" * 40,  # long, and nothing random about it
    ],
)
def test_a_weak_token_is_refused_at_start_with_the_way_to_make_one(ledger_env: Path, token: str) -> None:
    proc = subprocess.run(
        [todoledger_bin(), "serve", "--port", str(free_port()), "--token", token],
        env=person_env(ledger_env),
        capture_output=True,
        text=True,
        timeout=60,  # before: the server started and served
    )
    assert proc.returncode == 1
    line = proc.stderr.strip()
    assert "\n" not in line and ("128 bits" in line or "random" in line), line
    assert "32 hex or 22 base64url characters" in line and "secrets.token_urlsafe(32)" in line
    assert token not in line  # never shown


def stream(port: int, source: str) -> tuple[socket.socket, int]:
    conn = connect(port, source)
    conn.sendall(
        f"GET /events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {TOKEN}\r\n\r\n".encode()
    )
    return conn, head(conn)[0]


def test_event_streams_are_bounded_per_client_and_in_all(port: int) -> None:
    # Before: one client held 1,500 streams open.
    opened: list[socket.socket] = []
    try:
        for client in range(MAX_STREAMS // STREAMS_PER_CLIENT):
            for _ in range(STREAMS_PER_CLIENT):
                conn, status = stream(port, f"127.0.1.{client + 1}")
                opened.append(conn)
                assert status == 200
            extra, status = stream(port, f"127.0.1.{client + 1}")
            extra.close()
            assert status == 429  # its own share is full
        late, status = stream(port, "127.0.2.1")
        late.close()
        assert status == 503  # every place is taken
        opened.pop().close()  # a closed stream gives its place back (once the server sees it go)
        for _ in range(200):
            again, status = stream(port, "127.0.2.1")
            again.close()
            if status == 200:
                break
            assert status == 503
        assert status == 200
    finally:
        for conn in opened:
            conn.close()


def test_a_held_back_client_may_try_again_once_its_oldest_failure_is_a_minute_old() -> None:
    from todoledger.mcp.limits import LoginLimiter

    now = [0.0]
    limiter = LoginLimiter(clock=lambda: now[0])  # a clock that stands in for a minute of waiting
    for n in range(FAILED_LOGINS_PER_MINUTE):
        now[0] = float(n)
        assert limiter.retry_after("10.0.0.1") is None
        limiter.failed("10.0.0.1")
    assert limiter.retry_after("10.0.0.1") == 60 - (FAILED_LOGINS_PER_MINUTE - 1)
    assert limiter.retry_after("10.0.0.2") is None  # per client
    now[0] = 60.0  # the first failure is a minute old: one more try
    assert limiter.retry_after("10.0.0.1") is None
    limiter.failed("10.0.0.1")
    assert limiter.retry_after("10.0.0.1") == 1
