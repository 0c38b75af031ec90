"""Team mode through what a team meets: Debian's real pgbouncer in transaction
mode, started here in front of the test server, and a role with limited grants."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from .pgserver import database, ledger_url

PGBOUNCER = shutil.which("pgbouncer") or "/usr/sbin/pgbouncer"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Bouncer:
    """Debian's pgbouncer in transaction pool mode on a free loopback port, trust auth;
    `stop()` and `start()` make an outage and end it on the same port."""

    def __init__(self, tmp_path: Path, server_port: int = 5432, settings: str = "") -> None:
        """`settings`: more lines of its [pgbouncer] section."""
        if not os.path.exists(PGBOUNCER):
            if os.environ.get("CI"):
                pytest.fail("pgbouncer is not installed: .ci/run installs it", pytrace=False)
            pytest.skip("pgbouncer is not installed (apt-get install pgbouncer)")
        folder = tmp_path / "pgbouncer"
        folder.mkdir()
        self.port = _free_port()
        (folder / "users.txt").write_text('"postgres" ""\n"tl_reader" ""\n')
        (folder / "pgbouncer.ini").write_text(
            f"[databases]\n* = host=127.0.0.1 port={server_port}\n[pgbouncer]\n"
            f"listen_addr = 127.0.0.1\nlisten_port = {self.port}\nauth_type = trust\n"
            f"auth_file = {folder / 'users.txt'}\npool_mode = transaction\nunix_socket_dir =\n"
            "default_pool_size = 2\nmax_client_conn = 50\nignore_startup_parameters = extra_float_digits,options\n"
            + settings
        )
        self.command = [PGBOUNCER, str(folder / "pgbouncer.ini")]
        if os.geteuid() == 0:  # pgbouncer refuses to run as root
            for p in (tmp_path, folder, *folder.iterdir()):
                p.chmod(0o755 if p.is_dir() else 0o644)
            for parent in tmp_path.parents:
                if parent.stat().st_mode & 0o001 == 0 and str(parent).startswith("/tmp/"):
                    parent.chmod(parent.stat().st_mode | 0o001)
            self.command[1:1] = ["-u", "nobody"]
        self.proc: subprocess.Popen[bytes] | None = None
        self.start()

    def start(self) -> None:
        self.proc = proc = subprocess.Popen(self.command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    out = proc.stdout.read().decode() if proc.stdout else ""
                    proc.kill()
                    pytest.fail(f"pgbouncer did not start: {out[-2000:]}")
                time.sleep(0.05)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(10)
            self.proc = None


@pytest.fixture
def bouncer(tmp_path: Path) -> Iterator[Bouncer]:
    b = Bouncer(tmp_path)
    yield b
    b.stop()


@pytest.fixture
def pgbouncer(bouncer: Bouncer) -> int:
    return bouncer.port


@contextlib.contextmanager
def role_search_path(schema: str) -> Iterator[None]:
    """pgbouncer forwards no `options`: the ledger's schema as the role's default in the test database."""
    import psycopg

    name = database().rpartition("/")[2]
    with psycopg.connect(database(), autocommit=True) as conn:
        conn.execute(f"ALTER ROLE postgres IN DATABASE {name} SET search_path = {schema}")
    try:
        yield
    finally:
        with psycopg.connect(database(), autocommit=True) as conn:
            conn.execute(f"ALTER ROLE postgres IN DATABASE {name} RESET search_path")


def _through(url: str, port: int) -> str:
    return url.replace("127.0.0.1:5432", f"127.0.0.1:{port}", 1)


def test_pgbouncer_transaction_mode_takes_every_call(pgbouncer: int, tmp_path: Path) -> None:
    """Before: the second call through pgbouncer failed with DuplicatePreparedStatement
    "_pg3_0"; with ?pgbouncer=transaction each call goes through, fresh schema included."""
    from todoledger import Ledger

    direct = ledger_url()
    # search_path through pgbouncer: `options` is not forwarded, so the schema is the role's default
    schema = direct.rpartition("%3D")[2]
    import psycopg

    with psycopg.connect(database(), autocommit=True) as conn:
        conn.execute(
            f"ALTER ROLE postgres IN DATABASE {database().rpartition('/')[2]} SET search_path = {schema}"
        )
    try:
        url = _through(database(), pgbouncer) + "?pgbouncer=transaction"
        env = {**os.environ, "TODOLEDGER_DB": url}
        bin_ = str(Path(os.sys.executable).parent / "todoledger")
        for n in range(8):
            done = subprocess.run(
                [bin_, "add", f"item {n}", "--plan", "p"], env=env, capture_output=True, text=True, timeout=60
            )
            assert done.returncode == 0, done.stderr
        with Ledger(url) as lg:
            for n in range(
                6
            ):  # many statements on one client connection, each may land on another server one
                lg.add(f"more {n}", plan="p", writer="agent:a")
            assert len(lg.show("p")["items"]) == 14
        with Ledger(direct) as lg:
            assert len(lg.show("p")["items"]) == 14
        # Without the parameter the same pooler breaks psycopg, as before: the test sees the
        # pooler's real behaviour. (The agents' short calls go through the libpq binding,
        # store/libpq.py, which prepares nothing: they pass either way.)
        plain = _through(database(), pgbouncer)
        failures = 0
        for n in range(6):
            try:
                with Ledger(plain) as lg:  # psycopg: this process imported it
                    lg.add(f"plain {n}", plan="p", writer="agent:a")
            except Exception:
                failures += 1
        assert failures, "a pooler in transaction mode without ?pgbouncer=transaction no longer breaks"
    finally:
        with psycopg.connect(database(), autocommit=True) as conn:
            conn.execute(f"ALTER ROLE postgres IN DATABASE {database().rpartition('/')[2]} RESET search_path")


def test_bad_pgbouncer_value_is_one_line() -> None:
    from todoledger import Ledger
    from todoledger.core.model import LedgerError

    with pytest.raises(LedgerError, match=r"pgbouncer='sometimes': expected one of transaction"):
        Ledger(ledger_url() + "&pgbouncer=sometimes")


def test_a_role_without_grants_reads_one_line(tmp_path: Path) -> None:
    """Before: `internal error: InsufficientPrivilege`."""
    import psycopg

    from todoledger import Ledger

    url = ledger_url()
    schema = url.rpartition("%3D")[2]
    with Ledger(url) as lg:
        lg.add("one", plan="p", writer="agent:a")
    with psycopg.connect(database(), autocommit=True) as conn:
        conn.execute(
            "DO $$BEGIN CREATE ROLE tl_reader LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END$$"
        )
        conn.execute(f"GRANT USAGE ON SCHEMA {schema} TO tl_reader")
        conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO tl_reader")
    reader = url.replace("postgres@", "tl_reader@", 1)
    env = {**os.environ, "TODOLEDGER_DB": reader}
    bin_ = str(Path(os.sys.executable).parent / "todoledger")
    shown = subprocess.run([bin_, "show", "p"], env=env, capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    added = subprocess.run(
        [bin_, "add", "two", "--plan", "p"], env=env, capture_output=True, text=True, timeout=60
    )
    assert added.returncode == 1
    line = added.stderr.strip()
    assert "the role tl_reader may not write to this ledger" in line, line
    assert len(line.splitlines()) == 1 and "internal error" not in line
    with Ledger(url) as lg:
        assert [i["content"] for i in lg.show("p")["items"]] == ["one"]
    with psycopg.connect(database(), autocommit=True) as conn:
        conn.execute(f"REVOKE ALL ON ALL TABLES IN SCHEMA {schema} FROM tl_reader")
        conn.execute(f"REVOKE USAGE ON SCHEMA {schema} FROM tl_reader")


def test_application_name_is_the_writer() -> None:
    import psycopg

    from todoledger.store.open import open_store

    url = ledger_url()
    os.environ["PGAPPNAME"] = ""
    old = os.environ.pop("PGAPPNAME")
    os.environ["TODOLEDGER_WRITER"] = "agent:builder-7"
    try:
        store = open_store(url)
        with psycopg.connect(database(), autocommit=True) as conn:
            pid = store.conn.info.backend_pid  # type: ignore[attr-defined]
            row = conn.execute(
                "SELECT application_name FROM pg_stat_activity WHERE pid = %s", (pid,)
            ).fetchone()
        store.close()
        assert row == ("agent:builder-7",)
    finally:
        del os.environ["TODOLEDGER_WRITER"]
        if old:
            os.environ["PGAPPNAME"] = old


def _todowrite(cwd: Path, session: str, todos: list[tuple[str, str]]) -> dict[str, object]:
    return {
        "hook_event_name": "PostToolUse",
        "session_id": session,
        "cwd": str(cwd),
        "tool_name": "TodoWrite",
        "tool_input": {"todos": [{"content": c, "status": st, "activeForm": c} for c, st in todos]},
    }


def test_hook_events_during_an_outage_are_spooled_and_replayed_once(bouncer: Bouncer, tmp_path: Path) -> None:
    """Before: only a busy ledger was spooled; an outage lost the event. Now the
    pooler is stopped (connection refused), two events are kept in order, `show`
    and `doctor` say they wait, and once it is back `flush` applies them once, with
    their original time; a replay of the same file again changes nothing."""
    from todoledger import Ledger

    direct = ledger_url()
    schema = direct.rpartition("%3D")[2]
    url = _through(database(), bouncer.port) + "?pgbouncer=transaction"
    bin_ = str(Path(os.sys.executable).parent / "todoledger")
    project = tmp_path / "project"
    project.mkdir()
    env = {**os.environ, "TODOLEDGER_DB": url}

    def hook(event: dict[str, object]) -> None:
        r = subprocess.run(
            [bin_, "hook", "claude-code"],
            input=json.dumps(event),
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            cwd=project,
        )
        assert r.returncode == 0 and not r.stdout, r

    with role_search_path(schema):
        bouncer.stop()
        hook(_todowrite(project, "s1", [("Train", "in_progress")]))
        hook(_todowrite(project, "s1", [("Train", "completed"), ("Deploy", "pending")]))
        spool = list((Path(os.environ["XDG_STATE_HOME"]) / "todoledger").glob("pending-*"))
        assert len(spool) == 1 and len(list(spool[0].glob("*.json"))) == 2
        kept = sorted(spool[0].glob("*.json"))
        first_at = json.loads(kept[0].read_bytes().partition(b"\n")[0])["at"]
        saved = {p.name: p.read_bytes() for p in kept}
        r = subprocess.run([bin_, "flush"], env=env, capture_output=True, text=True, timeout=60, cwd=project)
        assert r.returncode == 1 and "0 replayed" in r.stdout, r
        bouncer.start()
        shown = subprocess.run(
            [bin_, "show"], env=env, capture_output=True, text=True, timeout=60, cwd=project
        )
        assert shown.returncode == 0 and "2 hook events wait in" in shown.stderr, shown
        doctor = subprocess.run(
            [bin_, "doctor", "--project", str(project)], env=env, capture_output=True, text=True, timeout=120
        )
        assert "2 hook events wait in" in doctor.stdout and "todoledger flush" in doctor.stdout, doctor.stdout
        r = subprocess.run([bin_, "flush"], env=env, capture_output=True, text=True, timeout=60, cwd=project)
        assert r.returncode == 0 and "2 replayed, 0 refused" in r.stdout, r
        with Ledger(direct) as lg:
            items = {i["content"]: i["status"] for i in lg.show()["items"]}
            ops = lg.ops()
        assert items == {"Train": "completed", "Deploy": "pending"}
        # Each replayed write carries its original writer and time, and its key: the one its
        # first attempt carried (a hook's, made before it tried), kept by the spool.
        assert [o["writer"] for o in ops] == ["claude-code:s1", "claude-code:s1"]
        assert ops[0]["at"] == first_at
        assert all(str(o["source_key"]).startswith("hook:") for o in ops)
        # A crash between the commit and the spool file's removal: the same events again.
        for name, data in saved.items():
            (spool[0] / name).write_bytes(data)
        r = subprocess.run([bin_, "flush"], env=env, capture_output=True, text=True, timeout=60, cwd=project)
        assert r.returncode == 0, r
        with Ledger(direct) as lg:
            assert len(lg.ops()) == len(ops)
            assert {i["content"]: i["status"] for i in lg.show()["items"]} == items


def test_init_team_writes_a_setting_every_hook_finds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: the URL lived only in TODOLEDGER_DB, a hook without it wrote a local SQLite
    ledger, and a non-public schema had to be created by hand."""
    import psycopg

    schema = f"team_{os.getpid()}_{int(time.time() * 1000) % 100000}"
    url = f"{database()}?options=-csearch_path%3D{schema}"
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    (project / ".git" / "HEAD").write_text("ref: refs/heads/main\n")  # a repository, not an empty folder
    env = {k: v for k, v in os.environ.items() if k != "TODOLEDGER_DB"}
    bin_ = str(Path(os.sys.executable).parent / "todoledger")
    secret = url.replace("postgres@", "postgres:hunter2@", 1)
    r = subprocess.run([bin_, "init", "--team", secret], env=env, cwd=project, capture_output=True, text=True)
    assert r.returncode == 1 and "password" in r.stderr and "hunter2" not in r.stderr + r.stdout, r
    assert not (project / ".todoledger").exists()
    r = subprocess.run([bin_, "init", "--team", url], env=env, cwd=project, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "schema ready" in r.stdout
    config = project / ".todoledger" / "config.toml"
    assert url in config.read_text()
    (project / "sub").mkdir()
    event = _todowrite(project / "sub", "s9", [("Ship it", "pending")])
    r = subprocess.run(
        [bin_, "hook", "claude-code"],
        input=json.dumps(event).encode(),
        env=env,
        cwd=project / "sub",
        capture_output=True,
    )
    assert r.returncode == 0
    assert not (project / ".todoledger" / "ledger.db").exists()  # no silent SQLite ledger
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT content FROM items").fetchall()
    assert rows == [("Ship it",)]
    # A password put into the setting by hand is refused in one line, never used.
    config.write_text(f'ledger = "{secret}"\n')
    r = subprocess.run([bin_, "show"], env=env, cwd=project, capture_output=True, text=True)
    assert r.returncode == 1 and "carries a password" in r.stderr and "hunter2" not in r.stderr, r
    with psycopg.connect(database(), autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA {schema} CASCADE")


def test_pyproject_names_the_ledger_and_env_still_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from todoledger.core.model import LedgerError
    from todoledger.store.locate import ledger_source

    project = tmp_path / "py"
    (project / "src").mkdir(parents=True)
    (project / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.todoledger]\nledger = "postgresql://me@db.internal/team"\n'
    )
    monkeypatch.delenv("TODOLEDGER_DB")
    assert ledger_source(project / "src") == (
        "postgresql://me@db.internal/team",
        str(project / "pyproject.toml"),
    )
    (project / "pyproject.toml").write_text('[tool.todoledger]\nledger = "postgresql://me:pw@db/team"\n')
    with pytest.raises(LedgerError, match="carries a password") as caught:
        ledger_source(project)
    assert "pw@" not in str(caught.value)
    (project / "pyproject.toml").write_text("[tool.todoledger]\nledger = \n")
    with pytest.raises(LedgerError, match="not valid TOML"):
        ledger_source(project)
    monkeypatch.setenv("TODOLEDGER_DB", str(tmp_path / "x.db"))
    assert ledger_source(project) == (str(tmp_path / "x.db"), "TODOLEDGER_DB")
