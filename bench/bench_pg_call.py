"""One CLI call on PostgreSQL beside the same call on SQLite, in one run.

Each round runs, interleaved and in alternating order, the calls an agent
makes most often on a SQLite ledger and on a PostgreSQL ledger holding the
same 1,000-item plan:

- `todoledger show --json` and `todoledger next --json` (its shell's reads);
- `todoledger hook claude-code` on a PostToolUse TodoWrite of a 10-item list
  (a write on every todo call of every agent), on SessionStart (the recovery
  text) and `--gate-stop` on Stop (the Stop gate: reads).

It prints each path's median per backend and the PostgreSQL/SQLite ratio
(the target is 1.5x on a direct connection). Where Debian's pgbouncer is
installed, the same calls through it in transaction mode are reported
separately. PostgreSQL: a database of its own on TODOLEDGER_BENCH_PG
(default postgresql://postgres@127.0.0.1:5432/postgres), dropped at the end.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_team import drop, pg_database  # noqa: E402

PGBOUNCER = shutil.which("pgbouncer") or "/usr/sbin/pgbouncer"
SESSION = "bench-session"


def todoledger_bin() -> str:
    found = Path(sys.executable).parent / "todoledger"
    return str(found) if found.exists() else "todoledger"


def build(target: str, items: int) -> None:
    """The same plan on each backend: `items` items in 50 groups, each waiting on the one
    before it, a fifth of them done; and the session's own 10-item list."""
    from todoledger import Ledger

    lines = []
    for k in range(items):
        row: dict[str, object] = {"id": f"t{k:05d}", "content": f"step {k} of the plan"}
        if k % 5 == 0:
            row["status"] = "completed"
        if k % 20:
            row["depends_on"] = [f"t{k - 1:05d}"]
        lines.append(json.dumps(row))
    with Ledger(target) as lg:
        lg.import_jsonl(lines)
        lg.write(todo_list(0), writer=f"claude-code:{SESSION}", dialect="claude-code")


def todo_list(round_: int) -> dict[str, object]:
    """The session's list, one status moved each round (so that each write changes something)."""
    todos = []
    for k in range(10):
        status = "completed" if k < round_ % 10 else "pending"
        todos.append({"content": f"session task {k}", "status": status, "activeForm": f"doing {k}"})
    return {"todos": todos}


def calls(cwd: str, round_: int) -> dict[str, tuple[list[str], bytes]]:
    event = {"session_id": SESSION, "cwd": cwd, "transcript_path": ""}
    write = {
        **event,
        "hook_event_name": "PostToolUse",
        "tool_name": "TodoWrite",
        "tool_input": todo_list(round_),
    }
    bin_ = todoledger_bin()
    return {
        "show --json": ([bin_, "show", "--json"], b""),
        "next --json": ([bin_, "next", "--json"], b""),
        "hook TodoWrite": ([bin_, "hook", "claude-code"], json.dumps(write).encode()),
        "hook SessionStart": (
            [bin_, "hook", "claude-code"],
            json.dumps({**event, "hook_event_name": "SessionStart", "source": "startup"}).encode(),
        ),
        "hook Stop gate": (
            [bin_, "hook", "claude-code", "--gate-stop"],
            json.dumps({**event, "hook_event_name": "Stop"}).encode(),
        ),
    }


def timed(argv: list[str], stdin: bytes, env: dict[str, str], cwd: str) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, input=stdin, capture_output=True, env=env, cwd=cwd, timeout=60)
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{argv[1:]} failed: {done.stderr.decode()[-500:]}")
    return took


def run_rounds(targets: dict[str, str], work: Path, rounds: int) -> dict[str, dict[str, list[float]]]:
    """Every path on every backend once a round, the backends' order alternating."""
    times: dict[str, dict[str, list[float]]] = {}
    envs = {}
    for backend, target in targets.items():
        env = {**os.environ, "TODOLEDGER_DB": target, "TODOLEDGER_WRITER": "agent-shell:bench"}
        env.pop("TODOLEDGER_PLAN", None)
        envs[backend] = env
        (work / backend).mkdir(exist_ok=True)
    order = list(targets)
    for round_ in range(1, rounds + 1):
        for backend in order if round_ % 2 else order[::-1]:
            cwd = str(work / backend)
            for path, (argv, stdin) in calls(cwd, round_).items():
                times.setdefault(path, {}).setdefault(backend, []).append(
                    timed(argv, stdin, envs[backend], cwd)
                )
    return times


def report(title: str, times: dict[str, dict[str, list[float]]], base: str, other: str) -> None:
    print(f"\n{title}")
    print(f"{'call':<18} | {base:>10} | {other:>10} | {'ratio':>6}")
    for path, by in times.items():
        a, b = statistics.median(by[base]), statistics.median(by[other])
        print(f"{path:<18} | {a * 1000:>7.1f} ms | {b * 1000:>7.1f} ms | {b / a:>5.2f}x")


def pg_ledger(database: str) -> tuple[str, str]:
    import psycopg

    schema = f"b_{secrets.token_hex(5)}"
    with psycopg.connect(database, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    return f"{database}?options=-csearch_path%3D{schema}", schema


def start_pgbouncer(work: Path) -> tuple[subprocess.Popen[bytes], int] | None:
    """Debian's pgbouncer in transaction mode on a free loopback port (as tests/test_team_pg.py)."""
    if not os.path.exists(PGBOUNCER):
        return None
    folder = work / "pgbouncer"
    folder.mkdir()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    (folder / "users.txt").write_text('"postgres" ""\n')
    (folder / "pgbouncer.ini").write_text(
        "[databases]\n* = host=127.0.0.1 port=5432\n[pgbouncer]\n"
        f"listen_addr = 127.0.0.1\nlisten_port = {port}\nauth_type = trust\n"
        f"auth_file = {folder / 'users.txt'}\npool_mode = transaction\nunix_socket_dir =\n"
        "default_pool_size = 4\nmax_client_conn = 50\nignore_startup_parameters = extra_float_digits,options\n"
    )
    command = [PGBOUNCER, str(folder / "pgbouncer.ini")]
    if os.geteuid() == 0:  # pgbouncer refuses to run as root
        for p in (work, folder, *folder.iterdir()):
            p.chmod(0o755 if p.is_dir() else 0o644)
        command[1:1] = ["-u", "nobody"]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, port
        except OSError:
            time.sleep(0.05)
    proc.kill()
    return None


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=15, help="rounds of every call on every backend")
    parser.add_argument("--items", type=int, default=1000, help="items of the plan")
    parser.add_argument("--no-pgbouncer", action="store_true", help="skip the pgbouncer run")
    args = parser.parse_args()
    import psycopg

    # Both backends' modules compiled first: a run with PYTHONDONTWRITEBYTECODE
    # would otherwise compile the modules only one backend loads on every call.
    compileall.compile_dir(str(ROOT / "src" / "todoledger"), quiet=1)

    name, database = pg_database()
    work = Path(tempfile.mkdtemp(prefix="bench-pg-call-"))
    bouncer = None
    try:
        url, schema = pg_ledger(database)
        targets = {"sqlite": str(work / "ledger.db"), "postgres": url}
        for target in targets.values():
            build(target, args.items)
        print(f"{args.items:,}-item plan, {args.rounds} rounds, the backends interleaved")
        report("direct connection", run_rounds(targets, work, args.rounds), "sqlite", "postgres")
        bouncer = None if args.no_pgbouncer else start_pgbouncer(work)
        if bouncer is not None:
            # pgbouncer forwards no `options`: the schema as the role's default in this database.
            with psycopg.connect(database, autocommit=True) as conn:
                conn.execute(f"ALTER ROLE postgres IN DATABASE {name} SET search_path = {schema}")
            pooled = (
                database.replace("127.0.0.1:5432", f"127.0.0.1:{bouncer[1]}", 1) + "?pgbouncer=transaction"
            )
            through = {"sqlite": targets["sqlite"], "pgbouncer": pooled}
            report(
                "through pgbouncer (transaction mode)",
                run_rounds(through, work, args.rounds),
                "sqlite",
                "pgbouncer",
            )
    finally:
        if bouncer is not None:
            bouncer[0].terminate()
            bouncer[0].wait(10)
            with psycopg.connect(database, autocommit=True) as conn:
                conn.execute(f"ALTER ROLE postgres IN DATABASE {name} RESET search_path")
        drop(name)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
