"""Named schema migrations, applied in order; the count is the schema version.

The SQL is portable (SQLite and PostgreSQL) except where a backend passes
its own spelling for an auto-numbered key.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from todoledger.store.base import Store as Executor


def m001_initial(db: Executor) -> None:
    key = db.serial_key
    db.execute_script(
        [
            "CREATE TABLE plans (name TEXT PRIMARY KEY, revision INTEGER NOT NULL DEFAULT 0,"
            " created_at TEXT NOT NULL, updated_at TEXT NOT NULL)",
            "CREATE TABLE items (id TEXT PRIMARY KEY, plan TEXT NOT NULL, content TEXT NOT NULL,"
            " status TEXT NOT NULL, priority TEXT NOT NULL, prank INTEGER NOT NULL,"
            " active_form TEXT, parent TEXT, position DOUBLE PRECISION NOT NULL, evidence TEXT, reason TEXT,"
            " notes TEXT, created_by TEXT NOT NULL, updated_by TEXT NOT NULL,"
            " created_at TEXT NOT NULL, updated_at TEXT NOT NULL, created_seq BIGINT NOT NULL)",
            "CREATE INDEX items_plan_position ON items (plan, position, created_seq)",
            "CREATE INDEX items_plan_content ON items (plan, content)",
            "CREATE INDEX items_ready ON items (plan, status, prank, position)",
            "CREATE INDEX items_parent ON items (parent)",
            "CREATE TABLE deps (plan TEXT NOT NULL, item TEXT NOT NULL, blocker TEXT NOT NULL,"
            " PRIMARY KEY (item, blocker))",
            "CREATE INDEX deps_blocker ON deps (blocker)",
            f"CREATE TABLE ops (op {key}, plan TEXT NOT NULL, writer TEXT NOT NULL, at TEXT NOT NULL,"
            " kind TEXT NOT NULL, dialect TEXT, summary TEXT, warnings TEXT, source_key TEXT UNIQUE,"
            " undone_by BIGINT)",
            "CREATE INDEX ops_plan ON ops (plan, op)",
            f"CREATE TABLE events (seq {key}, op BIGINT NOT NULL, plan TEXT NOT NULL, item TEXT,"
            " field TEXT NOT NULL, old TEXT, new TEXT, writer TEXT NOT NULL, at TEXT NOT NULL)",
            "CREATE INDEX events_plan ON events (plan, seq)",
            "CREATE INDEX events_item ON events (item, seq)",
            "CREATE INDEX events_op ON events (op)",
            "CREATE TABLE writer_base (plan TEXT NOT NULL, writer TEXT NOT NULL, item TEXT NOT NULL,"
            " content TEXT, status TEXT, priority TEXT, active_form TEXT,"
            " PRIMARY KEY (plan, writer, item))",
            "CREATE TABLE aliases (plan TEXT NOT NULL, writer TEXT NOT NULL, ext_id TEXT NOT NULL,"
            " item TEXT NOT NULL, PRIMARY KEY (plan, writer, ext_id))",
            "CREATE TABLE cursors (source TEXT PRIMARY KEY, position BIGINT NOT NULL, updated_at TEXT NOT NULL)",
        ]
    )


# Imports before m002 wrote the transcript place into the key: `<fmt>:<session>:<call>@<where>`.
_LEGACY_WHERE_MARK = "@"


def m002_op_source_location(db: Executor) -> None:
    """An op's source key is the call's identity only; where it sat in the
    transcript moves to `source_at`, so the same call found on another line
    (an older copy, a tail on stdin) is known as imported. A cursor keeps a
    fingerprint of the file it points into, so a replaced file starts over."""
    db.execute_script(
        [
            "ALTER TABLE ops ADD COLUMN source_at TEXT",
            "ALTER TABLE cursors ADD COLUMN fingerprint TEXT",
        ]
    )
    legacy = db.query(
        "SELECT op, source_key FROM ops WHERE source_key LIKE ? ORDER BY op", (f"%{_LEGACY_WHERE_MARK}%",)
    )
    if not legacy:
        return
    # Every key in use, old ones included, so that no update can hit the UNIQUE constraint.
    taken = {r[0] for r in db.query("SELECT source_key FROM ops WHERE source_key IS NOT NULL")}
    rows: list[tuple[str, str, int]] = []
    for op, key in legacy:
        identity, where = str(key).rsplit(_LEGACY_WHERE_MARK, 1)
        if identity in taken:
            # The same call imported twice from two places (the bug this fixes): the
            # first keeps the identity, the copy keeps its old, still unique, key.
            identity = str(key)
        taken.add(identity)
        rows.append((identity, where, op))
    db.executemany("UPDATE ops SET source_key = ?, source_at = ? WHERE op = ?", rows)


def m003_checks_receipts_metrics(db: Executor) -> None:
    """Checks (gates and assumptions) on items, a receipt for every run,
    numbers recorded on items, and parameter sweeps (one item per combination). A check is trusted while `trusted_hash` is the
    hash of its exact current text."""
    key = db.serial_key
    db.execute_script(
        [
            "CREATE TABLE checks (id TEXT PRIMARY KEY, plan TEXT NOT NULL, item TEXT NOT NULL,"
            " role TEXT NOT NULL, spec TEXT NOT NULL, options TEXT NOT NULL, trusted_hash TEXT,"
            " trusted_by TEXT, trusted_at TEXT, created_by TEXT NOT NULL, at TEXT NOT NULL)",
            "CREATE INDEX checks_plan_item ON checks (plan, item)",
            f"CREATE TABLE receipts (seq {key}, check_id TEXT NOT NULL, plan TEXT NOT NULL,"
            " item TEXT NOT NULL, spec TEXT NOT NULL, result TEXT NOT NULL, code INTEGER,"
            " duration_ms INTEGER NOT NULL, output TEXT NOT NULL, tree TEXT, asked_by TEXT NOT NULL,"
            " at TEXT NOT NULL)",
            "CREATE INDEX receipts_plan_check ON receipts (plan, check_id, seq)",
            f"CREATE TABLE metrics (seq {key}, plan TEXT NOT NULL, item TEXT NOT NULL, name TEXT NOT NULL,"
            " value DOUBLE PRECISION NOT NULL, run INTEGER NOT NULL, writer TEXT NOT NULL, at TEXT NOT NULL)",
            "CREATE INDEX metrics_item_name ON metrics (item, name, seq)",
            "CREATE TABLE sweeps (plan TEXT NOT NULL, name TEXT NOT NULL, parent TEXT NOT NULL,"
            " definition TEXT NOT NULL, created_by TEXT NOT NULL, at TEXT NOT NULL, PRIMARY KEY (plan, name))",
            "CREATE TABLE sweep_items (plan TEXT NOT NULL, sweep TEXT NOT NULL, item TEXT NOT NULL,"
            " params TEXT NOT NULL, baseline INTEGER NOT NULL, run_check TEXT NOT NULL, position INTEGER NOT NULL,"
            " PRIMARY KEY (plan, sweep, item))",
        ]
    )


def m004_board_fields(db: Executor) -> None:
    """(Numbered after main's m003, the checks' tables: it goes after them when merged.)
    The board's item fields: an estimate (canonical text like
    `1h30m`), the resources an item holds exclusively (a JSON list), and
    whether a person must approve it before an agent may start it."""
    db.execute_script(
        [
            "ALTER TABLE items ADD COLUMN estimate TEXT",
            "ALTER TABLE items ADD COLUMN uses TEXT",
            "ALTER TABLE items ADD COLUMN needs_approval INTEGER NOT NULL DEFAULT 0",
        ]
    )


def m005_leases(db: Executor) -> None:
    """Claims hold an item for a lease. A lease row outlives its release, so
    that the fencing token, the highest of the ledger's, only grows."""
    db.execute_script(
        [
            "CREATE TABLE leases (item TEXT PRIMARY KEY, plan TEXT NOT NULL, holder TEXT,"
            " token BIGINT NOT NULL, seconds INTEGER NOT NULL, claimed_at TEXT NOT NULL, expires_at TEXT)",
            "CREATE INDEX leases_plan_expiry ON leases (plan, expires_at)",
            "CREATE INDEX leases_holder ON leases (holder)",
            "ALTER TABLE plans ADD COLUMN lease_seconds INTEGER",
        ]
    )


def m006_forced_index(db: Executor) -> None:
    """Every reading of a plan says which items stand on a forced change (a
    completion past open prerequisites, open sub-items or a failing gate):
    those few events are found without reading the plan's whole history."""
    db.execute_script(["CREATE INDEX events_forced ON events (plan, item) WHERE field = 'forced'"])


def m007_event_chain(db: Executor) -> None:
    """Tamper evidence: each event carries `chain`, the SHA-256 of the event
    before it and its own fields (`repo.chain_link`), so `todoledger check`
    reports rows written around todoledger. The events already there are
    chained here, in seq order."""
    from todoledger.store.repo import EVENT_FIELDS, chain_link

    db.execute_script(["ALTER TABLE events ADD COLUMN chain TEXT"])
    prev, seq = "", 0
    while True:
        rows = db.query(
            f"SELECT seq, {EVENT_FIELDS} FROM events WHERE seq > ? ORDER BY seq LIMIT 5000", (seq,)
        )
        links = []
        for row in rows:
            seq = row[0]
            prev = chain_link(prev, row[1:])
            links.append((prev, seq))
        if links:
            db.executemany("UPDATE events SET chain = ? WHERE seq = ?", links)
        if len(rows) < 5000:
            return


def m008_check_provenance(db: Executor) -> None:
    """Who proved what: each check keeps how it arrived (`route`: person,
    board, import, agent:<kind>) beside its writer; each metric whether it was
    typed or measured (and by which check), and the person who accepted a
    typed one. Rows from before are left NULL: their route is read from the
    writer, and their metrics count as typed."""
    db.execute_script(
        [
            "ALTER TABLE checks ADD COLUMN route TEXT",
            "ALTER TABLE metrics ADD COLUMN provenance TEXT",
            "ALTER TABLE metrics ADD COLUMN check_id TEXT",
            "ALTER TABLE metrics ADD COLUMN accepted_by TEXT",
        ]
    )


def m009_untimed_ops(db: Executor) -> None:
    """Calls known by their place, not their time: a source that gives message
    numbers and no clock (the seeds the demo replays) records its ops with
    `untimed` set and the message number in `source_msg`. Their `at` is then
    when this ledger recorded them, never the call's own time, so readers order
    them by sequence and show no durations. Rows from before are timed."""
    db.execute_script(
        [
            "ALTER TABLE ops ADD COLUMN untimed INTEGER NOT NULL DEFAULT 0",
            "ALTER TABLE ops ADD COLUMN source_msg BIGINT",
        ]
    )


def m010_check_context(db: Executor) -> None:
    """Where a check runs is its writer's, not its claimant's: each check keeps
    the folder it was written in (`cwd`) and the PATH its writer had (`path`),
    and runs there, with that PATH, whoever runs `verify` or `done`. Rows from
    before are left NULL: they run where the caller runs, as they did."""
    db.execute_script(["ALTER TABLE checks ADD COLUMN cwd TEXT", "ALTER TABLE checks ADD COLUMN path TEXT"])


def m011_tokens(db: Executor) -> None:
    """The tokens a person registered in the ledger (`todoledger token add`):
    the SHA-256 of each secret, never the secret, with its holder's name and
    role. The command line believes only these: a tokens file its environment
    names could be the agent's own. Each registration is also an event, so
    `todoledger check` reports a row written around todoledger."""
    db.execute_script(
        [
            "CREATE TABLE tokens (hash TEXT PRIMARY KEY, name TEXT NOT NULL, role TEXT NOT NULL,"
            " created_by TEXT NOT NULL, at TEXT NOT NULL)"
        ]
    )


def m012_sweep_lifecycle(db: Executor) -> None:
    """Sweeps as the seeds ran them: a person's approval of a sweep's whole
    definition (its setup, ready, teardown and clean commands with its runs);
    each setup a sweep started (its process group's leader, host and output),
    with its readiness, teardown and clean check, so that a sweep killed while a
    server runs tears it down first when resumed; and each run's environment
    (command, parameters, host, git state, GPUs) on its receipt."""
    key = db.serial_key
    db.execute_script(
        [
            "ALTER TABLE sweeps ADD COLUMN approved_by TEXT",
            "ALTER TABLE sweeps ADD COLUMN approved_at TEXT",
            "ALTER TABLE sweeps ADD COLUMN approved_digest TEXT",
            "ALTER TABLE receipts ADD COLUMN env TEXT",
            f"CREATE TABLE sweep_setups (seq {key}, plan TEXT NOT NULL, sweep TEXT NOT NULL,"
            " item TEXT NOT NULL, host TEXT NOT NULL, pid INTEGER NOT NULL, ticks TEXT,"
            " command TEXT NOT NULL, log TEXT NOT NULL, started_at TEXT NOT NULL, started_by TEXT NOT NULL,"
            " ready TEXT, ended_at TEXT, teardown TEXT, clean TEXT, outcome TEXT)",
            "CREATE INDEX sweep_setups_open ON sweep_setups (plan, sweep, ended_at)",
        ]
    )


# Who changes what m009 changes: the ledger itself, never a person or an agent.
MIGRATION_WRITER = "todoledger:migration"


def m013_dropped_status(db: Executor) -> None:
    """An item a whole list left out is `dropped`, no longer a cancel: nobody
    decided about the work, and a list that names it again revives it. Drops
    recorded before were cancels with the reason `dropped by <writer>`: those
    (the last status change cancelled it, in the op that recorded its drop by
    that op's writer) become `dropped`, one recorded op per plan, so that
    the history says when and why (and `check` still replays the state).

    A writer's base also keeps `listed`: the open status its latest list gave
    an item the plan keeps completed or cancelled, so that the contradiction
    stays visible (show, prime, todoread, the board) while that list stands."""
    from todoledger.core.timefmt import now
    from todoledger.store.repo import Repo, Writes

    db.execute_script(
        [
            "ALTER TABLE writer_base ADD COLUMN listed TEXT",
            "CREATE INDEX writer_base_listed ON writer_base (plan) WHERE listed IS NOT NULL",
        ]
    )
    repo = Repo(db)
    found: dict[str, list[str]] = {}
    for item_id, plan, reason in db.query(
        "SELECT id, plan, reason FROM items WHERE status = 'cancelled' AND reason LIKE 'dropped by %'"
        " ORDER BY plan, created_seq"
    ):
        events = repo.events(str(plan), str(item_id))
        cancel = next((e for e in reversed(events) if e.field == "status"), None)
        if cancel is None or cancel.new != "cancelled" or reason != f"dropped by {cancel.writer}":
            continue
        if any(e.op == cancel.op and e.field == "dropped" for e in events):
            found.setdefault(str(plan), []).append(str(item_id))
    at = now()
    for plan, ids in found.items():
        op = repo.new_op(
            plan,
            MIGRATION_WRITER,
            at,
            "migrate",
            summary=f"{len(ids)} dropped items were recorded as cancelled",
        )
        w = Writes(repo, plan, MIGRATION_WRITER, at, op)
        for item_id in ids:
            w.set(item_id, "status", "cancelled", "dropped")
        w.flush()
        repo.touch_plan(plan, at)


def m014_markdown_layouts(db: Executor) -> None:
    """A Markdown task file round-trips: per plan, the shape of the file it was last
    imported from (headings, blank lines, each task's line and the item it became;
    core/mdfile.py), so that export writes it back as it was and a re-import of an
    edited file updates its items instead of adding new ones."""
    db.execute_script(
        [
            "CREATE TABLE markdown_layouts (plan TEXT PRIMARY KEY, layout TEXT NOT NULL, updated_at TEXT NOT NULL)"
        ]
    )


def m015_sweep_runners(db: Executor) -> None:
    """One runner per sweep: the process running it (host, pid and its start time),
    since when, its heartbeat (seconds since 1970, the real clock, updated by a
    thread of the runner: a row, not an event, so it never enters the chain) and
    the combination it is on, so that a second `sweep run`, on this host or
    another, refuses instead of tearing down a live run's server."""
    db.execute_script(
        [
            "CREATE TABLE sweep_runners (plan TEXT NOT NULL, sweep TEXT NOT NULL, host TEXT NOT NULL,"
            " pid INTEGER NOT NULL, ticks TEXT, writer TEXT NOT NULL, started_at TEXT NOT NULL,"
            " beat DOUBLE PRECISION NOT NULL, doing TEXT, PRIMARY KEY (plan, sweep))"
        ]
    )


def m016_panel_rows(db: Executor) -> None:
    """Claude Code's task panel, written one way from a plan (todoledger.panel): per
    task list, the plan revision it last showed and whether Claude reset it (all
    completed, then deleted); per row file, the item it shows and the hash of the
    file as todoledger last wrote or saw it, so that a row the model changed since
    is never overwritten."""
    db.execute_script(
        [
            "CREATE TABLE panel_lists (list TEXT PRIMARY KEY, plan TEXT NOT NULL, revision BIGINT NOT NULL,"
            " reset INTEGER NOT NULL DEFAULT 0)",
            "CREATE TABLE panel_rows (list TEXT NOT NULL, row_id TEXT NOT NULL, item TEXT NOT NULL,"
            " digest TEXT NOT NULL, PRIMARY KEY (list, row_id))",
        ]
    )


def m017_ledger_settings(db: Executor) -> None:
    """Settings fixed when a ledger is created (store/settings.py): the test clock,
    which lets TODOLEDGER_NOW fix the time on that ledger and no other."""
    db.execute_script(
        ["CREATE TABLE ledger_settings (name TEXT PRIMARY KEY, value TEXT NOT NULL, set_at TEXT NOT NULL)"]
    )


def m018_lease_secrets(db: Executor) -> None:
    """A lease's secret (its SHA-256; the secret itself goes only to the claimant):
    a fenced write proves its holder by it, never by a writer's name alone."""
    db.execute_script(["ALTER TABLE leases ADD COLUMN secret TEXT"])


def m019_check_stand_in(db: Executor) -> None:
    """A check against a stand-in (its author said so, or a demo): its passing is
    `stand-in`, never proof (core/verification.py). Only a person clears the mark."""
    db.execute_script(["ALTER TABLE checks ADD COLUMN stand_in INTEGER NOT NULL DEFAULT 0"])


def m020_recent_index(db: Executor) -> None:
    """The recovery text (every SessionStart, compaction and `todoread`) names the
    items completed and dropped last: found from this index in a few steps, not by
    sorting every finished item of the plan (ledger/reading.py `recovery_view`)."""
    db.execute_script(
        ["CREATE INDEX items_recent ON items (plan, status, updated_at DESC, position, created_seq)"]
    )


def m021_refusal_counts(db: Executor) -> None:
    """Refusals past the day's cap (ledger/writes.py `record_refusal`): one counter
    event in the plan's story says the cap was reached, and this row counts every
    refusal after it, so that report and board say "N more refused from <principal>".
    A count, not an event: the events are hash-chained and never updated."""
    db.execute_script(
        [
            "CREATE TABLE refusal_counts (counter TEXT PRIMARY KEY, plan TEXT NOT NULL,"
            " principal TEXT NOT NULL, day TEXT NOT NULL, n BIGINT NOT NULL)"
        ]
    )


def m022_tasks(db: Executor) -> None:
    """MCP Tasks (`io.modelcontextprotocol/tasks`, ledger/tasks.py): a tool call that runs
    on in a detached worker. The row is the task's whole state, so that any server
    process on the ledger answers `tasks/get` from it: its 128-bit id, the tool and its
    arguments, the principal it belongs to and the writer it writes as, its plan, status
    and message, times, how long it is kept after it ends (`ttl_ms`, giving `expires_at`),
    the poll interval, the result or error, input requests, the cancel flag, and the
    worker's lease (host, pid, process start ticks) and heartbeat (seconds since 1970, a
    row update, never an event). Each transition is also an event of the plan."""
    db.execute_script(
        [
            "CREATE TABLE tasks (id TEXT PRIMARY KEY, tool TEXT NOT NULL, arguments TEXT NOT NULL,"
            " principal TEXT NOT NULL, writer TEXT NOT NULL, plan TEXT NOT NULL, status TEXT NOT NULL,"
            " message TEXT, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, ttl_ms BIGINT NOT NULL,"
            " expires_at TEXT, poll_ms INTEGER NOT NULL, result TEXT, error TEXT, input_requests TEXT,"
            " cancel INTEGER NOT NULL DEFAULT 0, cwd TEXT, host TEXT, pid INTEGER, ticks TEXT,"
            " beat DOUBLE PRECISION, workers INTEGER NOT NULL DEFAULT 0)",
            "CREATE INDEX tasks_status ON tasks (status, updated_at)",
            "CREATE INDEX tasks_expiry ON tasks (expires_at)",
        ]
    )


MIGRATIONS: list[tuple[str, Callable[[Executor], None]]] = [  # type annotations only
    ("initial", m001_initial),
    ("op_source_location", m002_op_source_location),
    ("checks_receipts_metrics", m003_checks_receipts_metrics),
    ("board_fields", m004_board_fields),
    ("leases", m005_leases),
    ("forced_index", m006_forced_index),
    ("event_chain", m007_event_chain),
    ("check_provenance", m008_check_provenance),
    ("untimed_ops", m009_untimed_ops),
    ("check_context", m010_check_context),
    ("tokens", m011_tokens),
    ("sweep_lifecycle", m012_sweep_lifecycle),
    ("dropped_status", m013_dropped_status),
    ("markdown_layouts", m014_markdown_layouts),
    ("sweep_runners", m015_sweep_runners),
    ("panel_rows", m016_panel_rows),
    ("ledger_settings", m017_ledger_settings),
    ("lease_secrets", m018_lease_secrets),
    ("check_stand_in", m019_check_stand_in),
    ("recent_index", m020_recent_index),
    ("refusal_counts", m021_refusal_counts),
    ("tasks", m022_tasks),
]
SCHEMA_VERSION = len(MIGRATIONS)
