"""The ledger's queries, in portable SQL over any `Store`.

Every state change goes through `Writes`, which appends the event in the
same transaction, so state and history cannot drift apart.
"""

from __future__ import annotations

from todoledger.core.jsontext import compact, loads
from todoledger.core.merge import Seen
from todoledger.core.model import ANNOTATIONS, CREATED, PRIORITY_RANK, REMOVED, STATE_FIELDS, Event, Item
from todoledger.core.record import dataclass
from todoledger.core.scoped import contextmanager

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Sequence
    from typing import Any

    from todoledger.store.base import Row, Store

ITEM_COLUMNS = (
    "id, plan, content, status, priority, active_form, parent, position, evidence, reason, notes,"
    " created_by, updated_by, created_at, updated_at, estimate, uses, needs_approval"
)
_ITEM_COLUMNS_I = ", ".join(f"i.{name.strip()}" for name in ITEM_COLUMNS.split(","))
# Whether the row's item waits for anything (read with it: a write warns about unmet prerequisites).
_HAS_BLOCKERS = "EXISTS (SELECT 1 FROM deps d WHERE d.item = i.id)"
_SCALAR_FIELDS = frozenset(STATE_FIELDS) - {"depends_on"}
# Events that tell the story without changing state, as an SQL list.
_ANNOTATION_SQL = ", ".join(f"'{name}'" for name in sorted(ANNOTATIONS))


# The text json.dumps(ensure_ascii=False, separators=(",", ":")) gives, without importing
# `json` (core/jsontext.py): readers that decode nothing never load it.
_ENCODE = compact

_LEASE_COLUMNS = "item, plan, holder, token, seconds, claimed_at, expires_at, secret"


@dataclass
class Lease:
    item: str
    plan: str
    holder: str | None  # None once released: the row keeps the item's last token
    token: int
    seconds: int
    claimed_at: str
    expires_at: str | None
    # SHA-256 of the lease's secret (ledger/leases.py), None on a lease claimed before secrets
    secret: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "item": self.item,
            "plan": self.plan,
            "holder": self.holder,
            "token": self.token,
            "lease_seconds": self.seconds,
            "claimed_at": self.claimed_at,
            "expires_at": self.expires_at,
        }


def encode(value: Any) -> str | None:
    return None if value is None else _ENCODE(value)


def decode(text: str | None) -> Any:
    return None if text is None else loads(text)


def _item(row: Row) -> Item:
    # Positional, in Item's field order: a plan of 1,000 items builds 1,000 of these per read,
    # and binding 19 keywords costs noticeably more (see bench/bench_core.py).
    return Item(
        row[0],  # id
        row[1],  # plan
        row[2],  # content
        row[3],  # status
        row[4],  # priority
        row[5],  # active_form
        row[6],  # parent
        row[7],  # position
        [],  # depends_on: from the deps table
        row[8],  # evidence
        row[9],  # reason
        row[10],  # notes
        row[15],  # estimate
        [] if row[16] is None else decode(row[16]) or [],  # uses
        bool(row[17]),  # needs_approval
        row[11],  # created_by
        row[12],  # updated_by
        row[13],  # created_at
        row[14],  # updated_at
    )


# Tamper evidence: each event carries `chain`, the SHA-256 of the event before
# it (by seq, across the whole ledger) and its own fields. Writers append
# events in turn (SQLite's BEGIN IMMEDIATE; PostgreSQL's "feed" lock, held
# from the insert to the commit), so "the event before" is the last one committed. `todoledger check` reports a row
# whose chain does not follow: one written, changed or removed around
# todoledger. It is evidence, not a signature: there is no secret, so whoever
# can write the file and knows this rule could chain a forged row too.
EVENT_FIELDS = "op, plan, item, field, old, new, writer, at"


_SHA256: list[Any] = []


def _sha256() -> Any:
    """The builtin SHA-256 (no OpenSSL start-up on the hook path), else hashlib's; found once,
    by the interpreter's version (core/digests.py): no failed import of `_sha2` on 3.11, which
    searched every entry of sys.path on each write's first event."""
    if not _SHA256:
        from todoledger.core.digests import sha256

        _SHA256.append(sha256)
    return _SHA256[0]


def chain_link(prev: str, fields: Sequence[Any]) -> str:
    """The chain value of an event with `fields` (EVENT_FIELDS, as stored)
    after an event whose chain value is `prev`: each field length-prefixed, so
    no two events encode alike."""
    parts = [prev, "\n"]
    for value in fields:
        if value is None:
            parts.append("~")
        else:
            text = str(value)
            parts.append(f"{len(text)}:{text}")
    return str(_sha256()("".join(parts).encode("utf-8", "surrogatepass")).hexdigest())


def _column(name: str, value: Any) -> Any:
    """A state field's value as its column holds it."""
    if name == "uses":
        return encode(value) if value else None
    if name == "needs_approval":
        return 1 if value else 0
    return value


def _chunks(values: Sequence[str], size: int = 500) -> Iterable[Sequence[str]]:
    for start in range(0, len(values), size):
        yield values[start : start + size]


class Repo:
    def __init__(self, store: Store) -> None:
        self.db = store

    # plans -----------------------------------------------------------------
    def plans(self) -> list[Row]:
        return self.db.query(
            "SELECT p.name, p.revision, p.updated_at,"
            " (SELECT COUNT(*) FROM items i WHERE i.plan = p.name),"
            " (SELECT COUNT(*) FROM items i WHERE i.plan = p.name AND i.status IN ('pending', 'in_progress'))"
            " FROM plans p ORDER BY p.name"
        )

    def revision(self, plan: str) -> int:
        rows = self.db.query("SELECT revision FROM plans WHERE name = ?", (plan,))
        return int(rows[0][0]) if rows else 0

    def touch_plan(self, plan: str, at: str) -> int:
        """Count one more change of the plan; returns the new revision."""
        rows = self.db.query(
            "INSERT INTO plans (name, revision, created_at, updated_at) VALUES (?, 1, ?, ?)"
            " ON CONFLICT (name) DO UPDATE SET revision = plans.revision + 1, updated_at = excluded.updated_at"
            " RETURNING revision",
            (plan, at, at),
        )
        return int(rows[0][0])

    def ensure_plan(self, plan: str, at: str) -> int:
        """The plan's revision, creating the plan (revision 0) if it is new."""
        self.db.execute(
            "INSERT INTO plans (name, revision, created_at, updated_at) VALUES (?, 0, ?, ?)"
            " ON CONFLICT (name) DO NOTHING",
            (plan, at, at),
        )
        return self.revision(plan)

    # items -----------------------------------------------------------------
    def items(self, plan: str) -> list[Item]:
        items = [_item(r) for r in self._plan_rows(plan)]
        deps = self._plan_deps(plan)
        for it in items:
            it.depends_on = deps.get(it.id, [])
        return items

    def _plan_rows(self, plan: str) -> list[Row]:
        return self.db.query(
            f"SELECT {ITEM_COLUMNS} FROM items WHERE plan = ? ORDER BY position, created_seq", (plan,)
        )

    def _plan_deps(self, plan: str) -> dict[str, list[str]]:
        deps: dict[str, list[str]] = {}
        for item, blocker in self.db.query(
            "SELECT item, blocker FROM deps WHERE plan = ? ORDER BY blocker", (plan,)
        ):
            deps.setdefault(item, []).append(blocker)
        return deps

    def item_rows(self, plan: str) -> list[dict[str, Any]]:
        """The plan's items as `Item.as_dict` gives them (same keys, same order),
        straight from the rows: `show` of a plan of 1,000 items reads them on every
        agent call, and an `Item` built only to become this dict would add to every
        read (see bench/bench_core.py). The texts many items repeat (status, priority,
        writers, times) are one string each: a report of 100,000 items holds every row,
        and a copy of each text per row made its memory grow with the plan
        (bench/bench_report.py)."""
        rows = self._row_dicts(self._plan_rows(plan))
        deps = self._plan_deps(plan)
        if deps:
            for row in rows:
                row["depends_on"] = deps.get(row["id"], [])
        return rows

    @staticmethod
    def _row_dicts(found: Sequence[Row]) -> list[dict[str, Any]]:
        shared: dict[Any, Any] = {}
        share = shared.setdefault
        return [
            {
                "id": r[0],
                "content": r[2],
                "status": share(r[3], r[3]),
                "priority": share(r[4], r[4]),
                "active_form": r[5],
                "parent": r[6],
                "position": r[7],
                "depends_on": [],
                "evidence": r[8],
                "reason": r[9],
                "notes": r[10],
                "estimate": r[15],
                "uses": [] if r[16] is None else decode(r[16]) or [],
                "needs_approval": bool(r[17]),
                "created_by": share(r[11], r[11]),
                "updated_by": share(r[12], r[12]),
                "created_at": share(r[13], r[13]),
                "updated_at": share(r[14], r[14]),
            }
            for r in found
        ]

    def status_counts(self, plan: str) -> dict[str, int]:
        """How many of the plan's items have each status: one aggregate, no row read."""
        return {
            str(r[0]): int(r[1])
            for r in self.db.query(
                "SELECT status, COUNT(*) FROM items WHERE plan = ? GROUP BY status", (plan,)
            )
        }

    def recovery_rows(
        self, plan: str, *, recent: int, dropped: int, also: Sequence[str] = (), scheduled: bool = False
    ) -> list[dict[str, Any]]:
        """The rows the recovery text can name, as `item_rows` gives them (plan order),
        without reading the rest of the plan: every open item, the phases above them
        and the items they wait for (what says whether they are ready or blocked);
        every completed item with a check (a completion only claimed is never
        folded away); the `recent` completed items changed last (after those with a
        check: they may be only claimed) and the `dropped` items dropped last; and
        `also`. Its cost grows with the open work, never with what is finished or
        dropped (SessionStart reads it on every start and compaction)."""
        ids: dict[str, None] = dict.fromkeys(also)
        # `scheduled`: also one item with an estimate or a resource, if any: whether the plan is
        # scheduled (the compact read then gives its critical path) is the whole plan's to say.
        # A scan of the plan's rows in SQL: only the compact read asks it, not the recovery text.
        for r in (
            ()
            if not scheduled
            else self.db.query(
                "SELECT id FROM items WHERE plan = ? AND ((estimate IS NOT NULL AND estimate <> '')"
                " OR uses IS NOT NULL) LIMIT 1",
                (plan,),
            )
        ):
            ids[str(r[0])] = None
        for r in self.db.query(
            "WITH RECURSIVE up(id, parent) AS ("
            " SELECT id, parent FROM items WHERE plan = ? AND status IN ('pending', 'in_progress')"
            " UNION SELECT p.id, p.parent FROM up JOIN items p ON p.id = up.parent)"
            " SELECT id FROM up UNION SELECT d.blocker FROM deps d JOIN up ON d.item = up.id",
            (plan,),
        ):
            ids[str(r[0])] = None
        checked = self.db.query(
            "SELECT DISTINCT k.item FROM checks k JOIN items i ON i.id = k.item"
            " WHERE k.plan = ? AND i.status = 'completed'",
            (plan,),
        )
        ids.update(dict.fromkeys(str(r[0]) for r in checked))
        gated = len(checked)  # at most this many of the completed ones below are only claimed
        for r in self.db.query(
            "SELECT id FROM items WHERE plan = ? AND status = 'completed'"
            f" ORDER BY updated_at DESC, position, created_seq LIMIT {int(recent) + gated}",
            (plan,),
        ):
            ids[str(r[0])] = None
        for r in self.db.query(
            "SELECT id FROM items WHERE plan = ? AND status = 'dropped'"
            f" ORDER BY updated_at DESC, position, created_seq LIMIT {int(dropped)}",
            (plan,),
        ):
            ids[str(r[0])] = None
        found: list[Row] = []
        for chunk in _chunks(list(ids)):
            marks = ",".join("?" * len(chunk))
            # By id alone (the primary key): with the plan in the condition too, SQLite walked the plan's index.
            query = f"SELECT {ITEM_COLUMNS}, created_seq FROM items WHERE id IN ({marks})"
            found += [r for r in self.db.query(query, chunk) if r[1] == plan]
        found.sort(key=lambda r: (r[7], r[18]))
        rows = self._row_dicts(found)
        blockers: dict[str, list[str]] = {}
        for chunk in _chunks([r["id"] for r in rows]):
            marks = ",".join("?" * len(chunk))
            for item, blocker in self.db.query(
                f"SELECT item, blocker FROM deps WHERE item IN ({marks}) ORDER BY blocker", chunk
            ):
                blockers.setdefault(item, []).append(blocker)
        for row in rows:
            row["depends_on"] = blockers.get(row["id"], [])
        return rows

    def item_tuples(self, plan: str) -> tuple[list[Row], dict[str, list[str]]]:
        """The plan's rows as the database gives them (`ITEM_COLUMNS`, plan order) and
        each item's blockers: `show --json` writes its text straight from these."""
        return self._plan_rows(plan), self._plan_deps(plan)

    def items_by_id(self, ids: Sequence[str], *, deps: bool = True) -> dict[str, Item]:
        found: dict[str, Item] = {}
        for chunk in _chunks(list(ids)):
            marks = ",".join("?" * len(chunk))
            for row in self.db.query(f"SELECT {ITEM_COLUMNS} FROM items WHERE id IN ({marks})", chunk):
                found[row[0]] = _item(row)
        if deps:
            self._add_blockers(found, list(ids))
        return found

    def _add_blockers(self, found: dict[str, Item], ids: Sequence[str]) -> None:
        """Fill in these items' `depends_on` (blockers in id order)."""
        for chunk in _chunks(list(ids)):
            marks = ",".join("?" * len(chunk))
            for item, blocker in self.db.query(
                f"SELECT item, blocker FROM deps WHERE item IN ({marks}) ORDER BY blocker", chunk
            ):
                if item in found:
                    found[item].depends_on.append(blocker)

    def forced(self, plan: str) -> dict[str, list[Any]]:
        """Per item, the overrides (`forced` events) its current status stands
        on: those recorded with its last status change or after it (a gate's
        check removed later). An item reopened since is no longer forced."""
        rows = self.db.query(
            # By item first: the planner then takes the small partial index (events_forced), not the
            # plan's whole history in seq order (every read, and so every SessionStart, asks this).
            "SELECT item, new, op FROM events WHERE plan = ? AND field = 'forced' ORDER BY item, seq",
            (plan,),
        )
        if not rows:
            return {}
        last: dict[str, int] = {}
        for chunk in _chunks(sorted({r[0] for r in rows})):
            marks = ",".join("?" * len(chunk))
            for item, op in self.db.query(
                f"SELECT item, MAX(op) FROM events WHERE field = 'status' AND item IN ({marks}) GROUP BY item",
                chunk,
            ):
                last[item] = op
        out: dict[str, list[Any]] = {}
        for item, new, op in rows:
            if op >= last.get(item, 0):
                out.setdefault(item, []).append(decode(new))
        return out

    def open_below(self, ids: Sequence[str]) -> set[str]:
        """Of these items, those with an open item somewhere below them (a
        child, a grandchild...): one query a level, none below a leaf."""
        root_of = {i: i for i in dict.fromkeys(ids)}
        out: set[str] = set()
        frontier = list(root_of)
        for _ in range(64):
            found: dict[str, str] = {}
            for chunk in _chunks(frontier):
                marks = ",".join("?" * len(chunk))
                for child, parent, status in self.db.query(
                    f"SELECT id, parent, status FROM items WHERE parent IN ({marks})", chunk
                ):
                    root = root_of[parent]
                    if root in out:
                        continue
                    if status in ("pending", "in_progress"):
                        out.add(root)
                    elif child not in root_of:
                        found[child] = root
            root_of.update(found)
            frontier = [c for c, root in found.items() if root not in out]
            if not frontier:
                break
        return out

    def items_by_content(self, plan: str, contents: Sequence[str]) -> tuple[dict[str, Item], set[str]]:
        """The plan's items holding any of these texts (without their dependencies),
        and which of them wait for anything."""
        found: dict[str, Item] = {}
        linked: set[str] = set()
        for chunk in _chunks(list(dict.fromkeys(contents))):
            marks = ",".join("?" * len(chunk))
            for row in self.db.query(
                f"SELECT {ITEM_COLUMNS}, {_HAS_BLOCKERS} FROM items i WHERE plan = ? AND content IN ({marks})",
                (plan, *chunk),
            ):
                found[row[0]] = _item(row)
                if row[18]:
                    linked.add(row[0])
        return found, linked

    def has_checks(self, plan: str) -> bool:
        """Has the plan any check (`store.checks` holds the rest of their SQL)?"""
        return bool(self.db.query("SELECT 1 FROM checks WHERE plan = ? LIMIT 1", (plan,)))

    def exists(self, item_id: str) -> bool:
        return bool(self.db.query("SELECT 1 FROM items WHERE id = ?", (item_id,)))

    def item(self, item_id: str) -> Item | None:
        return self.items_by_id([item_id]).get(item_id)

    def ids_with_prefix(self, plan: str, prefix: str) -> list[str]:
        # substr, not LIKE: an id prefix is literal text ("_" and "%" are no wildcards)
        return [
            r[0]
            for r in self.db.query(
                "SELECT id FROM items WHERE plan = ? AND substr(id, 1, ?) = ?", (plan, len(prefix), prefix)
            )
        ]

    def ids_by_content(self, plan: str, contents: Sequence[str]) -> list[str]:
        found: list[str] = []
        for chunk in _chunks(list(dict.fromkeys(contents))):
            marks = ",".join("?" * len(chunk))
            found += [
                r[0]
                for r in self.db.query(
                    f"SELECT id FROM items WHERE plan = ? AND content IN ({marks})",
                    (plan, *chunk),
                )
            ]
        return found

    def position_after(self, plan: str, position: float) -> float | None:
        """The position of the plan's next item after `position`, if any."""
        rows = self.db.query(
            "SELECT MIN(position) FROM items WHERE plan = ? AND position > ?", (plan, position)
        )
        return None if rows[0][0] is None else float(rows[0][0])

    def tail_position(self, plan: str) -> float:
        rows = self.db.query("SELECT MAX(position) FROM items WHERE plan = ?", (plan,))
        return float(rows[0][0]) if rows and rows[0][0] is not None else 0.0

    def with_blockers(self, ids: Sequence[str]) -> set[str]:
        """Which of these items wait for anything."""
        found: set[str] = set()
        for chunk in _chunks(list(ids)):
            marks = ",".join("?" * len(chunk))
            found.update(
                r[0] for r in self.db.query(f"SELECT DISTINCT item FROM deps WHERE item IN ({marks})", chunk)
            )
        return found

    def blockers(self, item_id: str) -> list[str]:
        return [r[0] for r in self.db.query("SELECT blocker FROM deps WHERE item = ?", (item_id,))]

    def children(self, item_id: str) -> list[str]:
        return [r[0] for r in self.db.query("SELECT id FROM items WHERE parent = ?", (item_id,))]

    def parent_of(self, item_id: str) -> str | None:
        rows = self.db.query("SELECT parent FROM items WHERE id = ?", (item_id,))
        return rows[0][0] if rows else None

    def ready_candidates(self, plan: str, limit: int) -> tuple[list[Item], bool]:
        """Up to `limit` of the plan's pending items whose blockers are all
        completed and that have no open item below them, by priority then
        order, with their blockers; and whether the plan has any check.

        One query where no candidate waits for anything, two where some do:
        on PostgreSQL each statement is a round trip, and `next` would
        otherwise make four (ids, rows, blockers, checks). The limit is
        written into the SQL, not bound: with `LIMIT $2` PostgreSQL's generic
        plan guesses a tenth of the rows, costs more than a fresh one, and so
        the prepared statement was planned again on every call (0.3 ms of
        0.5; bench/bench_team.py `bench_next`)."""
        found: dict[str, Item] = {}
        linked: list[str] = []
        checked = False
        for row in self.db.query(
            f"SELECT {_ITEM_COLUMNS_I}, {_HAS_BLOCKERS}, EXISTS (SELECT 1 FROM checks k WHERE k.plan = ?)"
            " FROM items i WHERE i.plan = ? AND i.status = 'pending'"
            " AND NOT EXISTS (SELECT 1 FROM deps d JOIN items b ON b.id = d.blocker"
            "   WHERE d.item = i.id AND b.status <> 'completed')"
            " AND NOT EXISTS (SELECT 1 FROM items c WHERE c.parent = i.id"
            "   AND c.status IN ('pending', 'in_progress'))"
            f" ORDER BY i.prank, i.position, i.created_seq LIMIT {int(limit)}",
            (plan, plan),
        ):
            found[row[0]] = _item(row)
            if row[18]:
                linked.append(row[0])
            checked = bool(row[19])
        if linked:
            self._add_blockers(found, linked)
        return list(found.values()), checked

    def stranded(self, plan: str) -> list[tuple[str, str]]:
        """(item, blocker) for open items that wait for a cancelled or dropped one."""
        return [
            (r[0], r[1])
            for r in self.db.query(
                "SELECT d.item, d.blocker FROM deps d JOIN items i ON i.id = d.item"
                " JOIN items b ON b.id = d.blocker WHERE d.plan = ? AND b.status IN ('cancelled', 'dropped')"
                " AND i.status IN ('pending', 'in_progress') ORDER BY i.position, d.blocker",
                (plan,),
            )
        ]

    # writer views ----------------------------------------------------------
    def writer_view(self, plan: str, writer: str) -> tuple[dict[str, Seen], dict[str, Item], set[str]]:
        """What a writer last saw (its base), the plan's items among them as they
        are now (without their dependencies), and which of those wait for anything:
        one query where a whole-list write would otherwise make three."""
        base: dict[str, Seen] = {}
        items: dict[str, Item] = {}
        linked: set[str] = set()
        for r in self.db.query(
            f"SELECT b.item, b.content, b.status, b.priority, b.active_form, {_ITEM_COLUMNS_I}, {_HAS_BLOCKERS},"
            " b.listed FROM writer_base b LEFT JOIN items i ON i.id = b.item WHERE b.plan = ? AND b.writer = ?",
            (plan, writer),
        ):
            item_id = r[0]
            base[item_id] = Seen(r[1], r[2], r[3], r[4], r[24])
            if r[6] == plan:  # the item still exists, in this plan
                items[item_id] = _item(r[5:])
                if r[23]:
                    linked.add(item_id)
        return base, items, linked

    def base(self, plan: str, writer: str) -> dict[str, Seen]:
        return {
            r[0]: Seen(r[1], r[2], r[3], r[4], r[5])
            for r in self.db.query(
                "SELECT item, content, status, priority, active_form, listed FROM writer_base"
                " WHERE plan = ? AND writer = ?",
                (plan, writer),
            )
        }

    def save_base(self, plan: str, writer: str, seen: dict[str, Seen], *, listed: bool = False) -> None:
        """What the writer has now seen. `listed`: from its own list, which also says
        what it lists against the plan (`Seen.listed`); a read leaves that as it was."""
        if listed:
            self.db.executemany(
                "INSERT INTO writer_base (plan, writer, item, content, status, priority, active_form, listed)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (plan, writer, item) DO UPDATE SET"
                " content = excluded.content, status = excluded.status, priority = excluded.priority,"
                " active_form = excluded.active_form, listed = excluded.listed",
                [
                    (plan, writer, i, s.content, s.status, s.priority, s.active_form, s.listed)
                    for i, s in seen.items()
                ],
            )
            return
        self.db.executemany(
            "INSERT INTO writer_base (plan, writer, item, content, status, priority, active_form)"
            " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (plan, writer, item) DO UPDATE SET"
            " content = excluded.content, status = excluded.status, priority = excluded.priority,"
            " active_form = excluded.active_form",
            [(plan, writer, i, s.content, s.status, s.priority, s.active_form) for i, s in seen.items()],
        )

    def contested(self, plan: str) -> list[tuple[str, str, str]]:
        """(item, writer, listed): items the plan keeps completed or cancelled
        while a writer's latest list works on them."""
        return [
            (str(r[0]), str(r[1]), str(r[2]))
            for r in self.db.query(
                "SELECT b.item, b.writer, b.listed FROM writer_base b JOIN items i ON i.id = b.item"
                " WHERE b.plan = ? AND b.listed IS NOT NULL AND i.status IN ('completed', 'cancelled')"
                " ORDER BY b.item, b.writer",
                (plan,),
            )
        ]

    def status_writers(self, items: list[str]) -> dict[str, str]:
        """Who gave each item its current status: its last status change, or its creation."""
        if not items:
            return {}
        marks = ", ".join("?" * len(items))
        found: dict[str, str] = {}
        for item, writer in self.db.query(
            f"SELECT item, writer FROM events WHERE item IN ({marks}) AND field IN ('status', 'created')"
            " ORDER BY seq",
            tuple(items),
        ):
            found[str(item)] = str(writer)
        return found

    def forget_base(self, plan: str, writer: str, ids: Iterable[str]) -> None:
        self.db.executemany(
            "DELETE FROM writer_base WHERE plan = ? AND writer = ? AND item = ?",
            [(plan, writer, i) for i in ids],
        )

    def aliases(self, plan: str, writer: str) -> dict[str, str]:
        return dict(
            self.db.query("SELECT ext_id, item FROM aliases WHERE plan = ? AND writer = ?", (plan, writer))
        )

    def save_aliases(self, plan: str, writer: str, aliases: dict[str, str]) -> None:
        self.db.executemany(
            "INSERT INTO aliases (plan, writer, ext_id, item) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (plan, writer, ext_id) DO UPDATE SET item = excluded.item",
            [(plan, writer, e, i) for e, i in aliases.items()],
        )

    # imported sources ------------------------------------------------------
    def has_source(self, key: str) -> bool:
        """Was a call with this key recorded: an imported or replayed one (its source
        key), or a live one (its idempotency key: a spooled event keeps the key of its
        first attempt, which may have committed before its connection was lost)?"""
        return bool(self.db.query("SELECT 1 FROM ops WHERE source_key = ? OR call_key = ?", (key, key)))

    def call_op(self, key: str) -> int | None:
        """The op a live call with this idempotency key recorded, if any."""
        rows = self.db.query("SELECT op FROM ops WHERE call_key = ?", (key,))
        return int(rows[0][0]) if rows else None

    def op_subject(self, op: int) -> tuple[str, str | None] | None:
        """(plan, the first item its events touch) of an op; None if there is no such op."""
        rows = self.db.query(
            "SELECT o.plan, (SELECT e.item FROM events e WHERE e.op = o.op AND e.item IS NOT NULL"
            " ORDER BY e.seq LIMIT 1) FROM ops o WHERE o.op = ?",
            (op,),
        )
        return (rows[0][0], rows[0][1]) if rows else None

    def has_other_sources(self, plan: str, prefix: str) -> bool:
        """Does the plan hold an imported call whose source key does not start with `prefix`?"""
        return bool(
            self.db.query(
                "SELECT 1 FROM ops WHERE plan = ? AND source_key IS NOT NULL"
                " AND substr(source_key, 1, ?) <> ? LIMIT 1",
                (plan, len(prefix), prefix),
            )
        )

    def cursors(self, sources: Sequence[str]) -> dict[str, tuple[int, str | None]]:
        """Where reading of each source stopped: position and the source's fingerprint."""
        found: dict[str, tuple[int, str | None]] = {}
        for chunk in _chunks(list(sources)):
            marks = ",".join("?" * len(chunk))
            for source, position, mark in self.db.query(
                f"SELECT source, position, fingerprint FROM cursors WHERE source IN ({marks})", chunk
            ):
                found[source] = (int(position), mark)
        return found

    def save_cursors(self, cursors: dict[str, tuple[int, str | None]], at: str) -> None:
        self.db.executemany(
            "INSERT INTO cursors (source, position, updated_at, fingerprint) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (source) DO UPDATE SET position = excluded.position,"
            " updated_at = excluded.updated_at, fingerprint = excluded.fingerprint",
            [(source, position, at, mark) for source, (position, mark) in cursors.items()],
        )

    def markdown_layout(self, plan: str) -> str | None:
        """The shape of the Markdown file the plan was last imported from (core/mdfile.py)."""
        rows = self.db.query("SELECT layout FROM markdown_layouts WHERE plan = ?", (plan,))
        return str(rows[0][0]) if rows else None

    def save_markdown_layout(self, plan: str, layout: str, at: str) -> None:
        self.db.execute(
            "INSERT INTO markdown_layouts (plan, layout, updated_at) VALUES (?, ?, ?)"
            " ON CONFLICT (plan) DO UPDATE SET layout = excluded.layout, updated_at = excluded.updated_at",
            (plan, layout, at),
        )

    def panel(self, list_id: str) -> tuple[int | None, bool, dict[str, tuple[str, str]]]:
        """Claude Code's task list `list_id` as todoledger last wrote it: the plan
        revision it showed (None: never), whether Claude reset it, and per row id
        the item and the hash of the file."""
        head = self.db.query("SELECT revision, reset FROM panel_lists WHERE list = ?", (list_id,))
        rows = self.db.query("SELECT row_id, item, digest FROM panel_rows WHERE list = ?", (list_id,))
        revision = int(head[0][0]) if head and int(head[0][0]) >= 0 else None
        return revision, bool(head and head[0][1]), {str(r[0]): (str(r[1]), str(r[2])) for r in rows}

    def save_panel(
        self,
        list_id: str,
        plan: str,
        revision: int | None,
        reset: bool | None,
        rows: dict[str, tuple[str, str]],
        gone: list[str],
    ) -> None:
        """Record a sync (or a row the hook saw): rows written or seen, rows gone;
        `revision`/`reset` None keeps the list's."""
        if revision is not None or reset is not None:
            head = self.db.query("SELECT revision, reset FROM panel_lists WHERE list = ?", (list_id,))
            kept_revision, kept_reset = (int(head[0][0]), bool(head[0][1])) if head else (-1, False)
            self.db.execute(
                "INSERT INTO panel_lists (list, plan, revision, reset) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (list) DO UPDATE SET plan = excluded.plan, revision = excluded.revision,"
                " reset = excluded.reset",
                (
                    list_id,
                    plan,
                    kept_revision if revision is None else revision,
                    int(kept_reset if reset is None else reset),
                ),
            )
        if gone:
            self.db.executemany(
                "DELETE FROM panel_rows WHERE list = ? AND row_id = ?", [(list_id, r) for r in gone]
            )
        if rows:
            self.db.executemany(
                "INSERT INTO panel_rows (list, row_id, item, digest) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (list, row_id) DO UPDATE SET item = excluded.item, digest = excluded.digest",
                [(list_id, r, item, digest) for r, (item, digest) in rows.items()],
            )

    # ops and events --------------------------------------------------------
    @contextmanager
    def savepoint(self, name: str = "ledger_write") -> Iterator[None]:
        """Inside a transaction: an exception takes back only what this block wrote."""
        self.db.execute(f"SAVEPOINT {name}")
        try:
            yield
        except BaseException:
            self.db.execute(f"ROLLBACK TO {name}")
            self.db.execute(f"RELEASE {name}")
            raise
        self.db.execute(f"RELEASE {name}")

    def new_op(
        self,
        plan: str,
        writer: str,
        at: str,
        kind: str,
        *,
        dialect: str | None = None,
        summary: str | None = None,
        warnings: list[dict[str, str]] | None = None,
        source_key: str | None = None,
        source_at: str | None = None,
        untimed: bool = False,
        source_msg: int | None = None,
        call_key: str | None = None,
    ) -> int:
        """A new op; `untimed`: the call's own time is not known (`at` is when it
        was recorded here), `source_msg` the message number its source gives,
        `call_key` the live call's idempotency key (unique)."""
        # The key's column only when there is one: a migration before m023 records ops too.
        column, mark = (", call_key", ", ?") if call_key is not None else ("", "")
        rows = self.db.query(
            "INSERT INTO ops (plan, writer, at, kind, dialect, summary, warnings, source_key, source_at,"
            f" untimed, source_msg{column}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?{mark}) RETURNING op",
            (
                plan,
                writer,
                at,
                kind,
                dialect,
                summary,
                encode(warnings) if warnings else None,
                source_key,
                source_at,
                1 if untimed else 0,
                source_msg,
                *((call_key,) if call_key is not None else ()),
            ),
        )
        return int(rows[0][0])

    def last_undoable(self, plan: str, writer: str | None = None) -> Row | None:
        """The plan's latest op that changed state and is not undone; given a
        writer, that writer's latest."""
        mine = " AND writer = ?" if writer is not None else ""
        rows = self.db.query(
            "SELECT op, kind, writer, at, summary FROM ops WHERE plan = ? AND kind <> 'undo'"
            f"{mine} AND undone_by IS NULL AND EXISTS (SELECT 1 FROM events e WHERE e.op = ops.op"
            f" AND e.field NOT IN ({_ANNOTATION_SQL}))"
            " ORDER BY op DESC LIMIT 1",
            (plan, writer) if writer is not None else (plan,),
        )
        return rows[0] if rows else None

    def later_changes(self, plan: str, after_seq: int, items: Sequence[str]) -> list[Event]:
        """State changes to these items after an event: what an undo would overwrite."""
        found: list[Event] = []
        for chunk in _chunks(list(dict.fromkeys(items))):
            marks = ",".join("?" * len(chunk))
            found += [
                Event(r[0], r[1], r[2], r[3], r[4], decode(r[5]), decode(r[6]), r[7], r[8])
                for r in self.db.query(
                    "SELECT seq, op, plan, item, field, old, new, writer, at FROM events"
                    f" WHERE plan = ? AND seq > ? AND item IN ({marks})"
                    f" AND field NOT IN ({_ANNOTATION_SQL})"
                    # An undone op and the undo that took it back cancel out.
                    " AND op NOT IN (SELECT op FROM ops WHERE undone_by IS NOT NULL)"
                    " AND op NOT IN (SELECT undone_by FROM ops WHERE undone_by IS NOT NULL) ORDER BY seq",
                    (plan, after_seq, *chunk),
                )
            ]
        return sorted(found, key=lambda e: e.seq)

    def mark_undone(self, op: int, by: int) -> None:
        self.db.execute("UPDATE ops SET undone_by = ? WHERE op = ?", (by, op))

    def events(self, plan: str, item: str | None = None, op: int | None = None) -> list[Event]:
        sql = "SELECT seq, op, plan, item, field, old, new, writer, at FROM events WHERE plan = ?"
        params: list[Any] = [plan]
        if item is not None:
            sql += " AND item = ?"
            params.append(item)
        if op is not None:
            sql += " AND op = ?"
            params.append(op)
        return [
            Event(r[0], r[1], r[2], r[3], r[4], decode(r[5]), decode(r[6]), r[7], r[8])
            for r in self.db.query(sql + " ORDER BY seq", params)
        ]

    def event_dicts(
        self, plan: str, item: str | None = None, *, created: tuple[str, ...] | None = None
    ) -> list[dict[str, Any]]:
        """The plan's events (or one item's), oldest first, as `Event.as_dict` gives them,
        straight from the rows. A report of a 100,000-item plan reads several events an item:
        an `Event` made only to become its dict, and a copy of the same writer, field, time
        and status in every event, made its memory, and so its cost per item, grow with the
        plan (bench/bench_report.py); here each such text is one string, shared. Given
        `created`, a "created" event's value keeps only those fields of the item it made."""
        sql = "SELECT seq, op, item, field, old, new, writer, at FROM events WHERE plan = ?"
        params: list[Any] = [plan]
        if item is not None:
            sql += " AND item = ?"
            params.append(item)
        shared: dict[Any, Any] = {}
        share = shared.setdefault
        out: list[dict[str, Any]] = []
        for seq, op, item_id, name, old, new, writer, at in self.db.query(sql + " ORDER BY seq", params):
            before, after = decode(old), decode(new)
            if type(before) is str:
                before = share(before, before)
            if type(after) is str:
                after = share(after, after)
            elif created is not None and name == CREATED and type(after) is dict:
                whole: dict[str, Any] = after
                kept = {k: whole[k] for k in created if k in whole}
                after = {k: share(v, v) if type(v) is str else v for k, v in kept.items()}
            out.append(
                {
                    "seq": seq,
                    "op": op,
                    "at": share(at, at),
                    "item": share(item_id, item_id),
                    "field": share(name, name),
                    "old": before,
                    "new": after,
                    "writer": share(writer, writer),
                }
            )
        return out

    def approval_events(self, plan: str) -> list[Event]:
        """People's approvals of the plan's items and of the plan, oldest first."""
        return [
            Event(r[0], r[1], r[2], r[3], r[4], decode(r[5]), decode(r[6]), r[7], r[8])
            for r in self.db.query(
                "SELECT seq, op, plan, item, field, old, new, writer, at FROM events"
                " WHERE plan = ? AND field IN ('approved', 'plan_approved') ORDER BY seq",
                (plan,),
            )
        ]

    def last_op(self) -> int:
        """The ledger's latest op: it grows with every recorded change of any plan."""
        return int(self.db.query("SELECT COALESCE(MAX(op), 0) FROM ops")[0][0])

    def writers(self, plan: str) -> list[Row]:
        """(writer, last write, ops) per writer of the plan, latest first."""
        return self.db.query(
            "SELECT writer, MAX(at), COUNT(*) FROM ops WHERE plan = ? GROUP BY writer ORDER BY MAX(at) DESC",
            (plan,),
        )

    def all_writers(self) -> list[str]:
        """Every writer that recorded an op, in any plan."""
        return [str(r[0]) for r in self.db.query("SELECT DISTINCT writer FROM ops")]

    def last_ops(self) -> list[Row]:
        """(plan, op, writer, at, kind, summary, untimed, source_at) of each plan's latest op."""
        return self.db.query(
            "SELECT o.plan, o.op, o.writer, o.at, o.kind, o.summary, o.untimed, o.source_at FROM ops o"
            " WHERE o.op = (SELECT MAX(p.op) FROM ops p WHERE p.plan = o.plan)"
        )

    def refused_since(self, plan: str, at: str) -> list[Row]:
        """(writer, count) of the plan's live refusals (no source: not imported) since `at`."""
        return self.db.query(
            "SELECT writer, COUNT(*) FROM ops WHERE plan = ? AND kind = 'refused' AND at >= ?"
            " AND source_key IS NULL GROUP BY writer",
            (plan, at),
        )

    def count_refusal(self, counter: str, plan: str, principal: str, day: str) -> None:
        """One more refusal past the day's cap, counted under its counter event's key."""
        self.db.execute(
            "INSERT INTO refusal_counts (counter, plan, principal, day, n) VALUES (?, ?, ?, ?, 1)"
            " ON CONFLICT (counter) DO UPDATE SET n = refusal_counts.n + 1",
            (counter, plan, principal, day),
        )

    def refusal_counts(self, plan: str) -> dict[str, tuple[str, int]]:
        """counter event's key -> (principal, refusals counted past the cap) of the plan."""
        return {
            str(r[0]): (str(r[1]), int(r[2]))
            for r in self.db.query("SELECT counter, principal, n FROM refusal_counts WHERE plan = ?", (plan,))
        }

    def ops(self, plan: str) -> list[Row]:
        return self.db.query(
            "SELECT op, writer, at, kind, dialect, summary, warnings, undone_by, source_key, source_at,"
            " untimed, source_msg FROM ops WHERE plan = ? ORDER BY op",
            (plan,),
        )

    def untimed_ops(self, plan: str) -> dict[int, str]:
        """The plan's ops recorded without a time of their own: op -> where its source places it."""
        return {
            int(r[0]): str(r[1] or (f"msg {r[2]}" if r[2] is not None else "time not recorded"))
            for r in self.db.query(
                "SELECT op, source_at, source_msg FROM ops WHERE plan = ? AND untimed = 1", (plan,)
            )
        }

    def conflicts_since_change(self, item: str, writer: str) -> list[Any]:
        """The conflicts this writer recorded on the item since its state last changed."""
        rows = self.db.query(
            "SELECT new FROM events WHERE item = ? AND field = 'conflict' AND writer = ? AND seq >"
            " (SELECT COALESCE(MAX(seq), 0) FROM events WHERE item = ?"
            f"  AND field NOT IN ({_ANNOTATION_SQL}))",
            (item, writer, item),
        )
        return [decode(r[0]) for r in rows]

    # leases ------------------------------------------------------------------
    def lease(self, item: str) -> Lease | None:
        rows = self.db.query(f"SELECT {_LEASE_COLUMNS} FROM leases WHERE item = ?", (item,))
        return Lease(*rows[0]) if rows else None

    def leases(self, plan: str, *, held: bool = True) -> list[Lease]:
        held_sql = " AND holder IS NOT NULL" if held else ""
        return [
            Lease(*r)
            for r in self.db.query(
                f"SELECT {_LEASE_COLUMNS} FROM leases WHERE plan = ?{held_sql} ORDER BY token", (plan,)
            )
        ]

    def held_in_plan(self, plan: str) -> list[Lease]:
        """The plan's held leases, by item: a held lease has an expiry, a released
        one none, so the (plan, expires_at) index finds them without the released rows."""
        rows = self.db.query(
            f"SELECT {_LEASE_COLUMNS} FROM leases WHERE plan = ? AND expires_at IS NOT NULL ORDER BY item",
            (plan,),
        )
        return [Lease(*r) for r in rows]

    def expired_leases(self, plan: str | None, at: str) -> list[Lease]:
        where = "holder IS NOT NULL AND expires_at <= ?" + (" AND plan = ?" if plan is not None else "")
        return [
            Lease(*r)
            for r in self.db.query(
                f"SELECT {_LEASE_COLUMNS} FROM leases WHERE {where} ORDER BY token",
                (at, plan) if plan is not None else (at,),
            )
        ]

    def next_token(self) -> int:
        """One more than any token the ledger ever gave (rows are kept after release)."""
        return int(self.db.query("SELECT COALESCE(MAX(token), 0) + 1 FROM leases")[0][0])

    def save_lease(self, lease: Lease) -> None:
        self.db.execute(
            f"INSERT INTO leases ({_LEASE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (item) DO UPDATE SET plan = excluded.plan, holder = excluded.holder,"
            " token = excluded.token, seconds = excluded.seconds, claimed_at = excluded.claimed_at,"
            " expires_at = excluded.expires_at, secret = excluded.secret",
            (
                lease.item,
                lease.plan,
                lease.holder,
                lease.token,
                lease.seconds,
                lease.claimed_at,
                lease.expires_at,
                lease.secret,
            ),
        )

    def end_lease(self, item: str) -> None:
        self.db.execute("UPDATE leases SET holder = NULL, expires_at = NULL WHERE item = ?", (item,))

    def plan_lease_seconds(self, plan: str) -> int | None:
        rows = self.db.query("SELECT lease_seconds FROM plans WHERE name = ?", (plan,))
        return int(rows[0][0]) if rows and rows[0][0] is not None else None

    def set_plan_lease_seconds(self, plan: str, seconds: int | None, at: str) -> None:
        self.ensure_plan(plan, at)
        self.db.execute("UPDATE plans SET lease_seconds = ? WHERE name = ?", (seconds, plan))

    # whole-ledger reads ------------------------------------------------------
    def events_after(self, seq: int, limit: int = 1000) -> list[Event]:
        """Every plan's events after `seq`, oldest first: what `watch` prints."""
        return [
            Event(r[0], r[1], r[2], r[3], r[4], decode(r[5]), decode(r[6]), r[7], r[8])
            for r in self.db.query(
                "SELECT seq, op, plan, item, field, old, new, writer, at FROM events WHERE seq > ?"
                " ORDER BY seq LIMIT ?",
                (seq, limit),
            )
        ]

    def last_seq(self) -> int:
        return int(self.db.query("SELECT COALESCE(MAX(seq), 0) FROM events")[0][0])

    def integrity(self) -> list[str]:
        return self.db.integrity()

    def last_chain(self) -> str:
        """The chain value of the ledger's last event ("" before the first)."""
        rows = self.db.query("SELECT chain FROM events ORDER BY seq DESC LIMIT 1")
        return str(rows[0][0] or "") if rows else ""

    def chain_at(self, seq: int) -> str | None:
        """The chain value of event `seq`, or None where the ledger has no such event."""
        rows = self.db.query("SELECT chain FROM events WHERE seq = ?", (seq,))
        return str(rows[0][0] or "") if rows else None

    def last_signed(self, key: str) -> tuple[int, str] | None:
        """The newest `signed` event made by `key` (a person key's id): (number, chain value)."""
        for seq, new, chain in self.db.query(
            "SELECT seq, new, chain FROM events WHERE field = 'signed' ORDER BY seq DESC LIMIT 50"
        ):
            value = decode(new)
            if isinstance(value, dict) and value.get("key") == key:
                return int(seq), str(chain or "")
        return None

    def fields_events(self, fields: Sequence[str]) -> list[Event]:
        """Every event of these fields, in every plan, oldest first (for `check`)."""
        marks = ",".join("?" * len(fields))
        return [
            Event(r[0], r[1], r[2], r[3], r[4], decode(r[5]), decode(r[6]), r[7], r[8])
            for r in self.db.query(
                "SELECT seq, op, plan, item, field, old, new, writer, at FROM events"
                f" WHERE field IN ({marks}) ORDER BY seq",
                list(fields),
            )
        ]

    def op_writers(self, ops: Sequence[int]) -> dict[int, tuple[str, str]]:
        """op -> (writer, kind), for `check`."""
        out: dict[int, tuple[str, str]] = {}
        for start in range(0, len(ops), 500):
            part = list(ops[start : start + 500])
            marks = ",".join("?" * len(part))
            for op, writer, kind in self.db.query(
                f"SELECT op, writer, kind FROM ops WHERE op IN ({marks})", part
            ):
                out[int(op)] = (str(writer), str(kind))
        return out

    def chain_breaks(self, plan: str | None = None, page: int = 5000) -> list[str]:
        """Events whose chain value does not follow from the event before them
        and their own fields (of `plan` only, given one): rows written, changed
        or removed around todoledger."""
        found: list[str] = []
        prev, seq = "", 0
        while True:
            rows = self.db.query(
                f"SELECT seq, {EVENT_FIELDS}, chain FROM events WHERE seq > ? ORDER BY seq LIMIT ?",
                (seq, page),
            )
            for row in rows:
                seq, fields, stored = row[0], row[1:9], row[9]
                if stored != chain_link(prev, fields) and (plan is None or row[2] == plan):
                    found.append(
                        f"{row[2]}/{row[3] or '-'}: event {seq} ({row[4]}, op {row[1]} by {row[7]}) does not"
                        " chain to the event before it: a row written, changed or removed around todoledger"
                    )
                prev = str(stored or "")
            if len(rows) < page:
                return found

    def count_events(self, plan: str | None = None) -> int:
        if plan is None:
            return int(self.db.query("SELECT COUNT(*) FROM events")[0][0])
        return int(self.db.query("SELECT COUNT(*) FROM events WHERE plan = ?", (plan,))[0][0])


class Writes:
    """One operation: every state change here is paired with its event.

    Events are buffered and inserted in one statement by `flush`, which the
    service calls before its transaction commits; an exception discards
    them together with the rolled-back state.
    """

    def __init__(self, repo: Repo, plan: str, writer: str, at: str, op: int) -> None:
        self.repo, self.db = repo, repo.db
        self.plan, self.writer, self.at, self.op = plan, writer, at, op
        self.count = 0
        self.pending: list[tuple[Any, ...]] = []

    def flush(self) -> None:
        if self.pending:
            # The feed's turn, held to the commit: numbers in commit order and
            # one chain, whichever plans write at once (store/postgres.py `lock`).
            self.db.lock("feed")
            prev = self.repo.last_chain()
            rows = []
            for fields in self.pending:
                prev = chain_link(prev, fields)
                rows.append((*fields, prev))
            self.db.executemany(
                f"INSERT INTO events ({EVENT_FIELDS}, chain) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
            self.pending = []

    def _event(self, item: str | None, name: str, old: Any, new: Any) -> int:
        self.count += 1
        self.pending.append((self.op, self.plan, item, name, encode(old), encode(new), self.writer, self.at))
        # Orders items created in the same instant: ops only grow, and so does the count within one.
        return self.op * 1_000_000 + self.count

    def annotate(self, item: str | None, name: str, old: Any, new: Any) -> None:
        self._event(item, name, old, new)

    def create(self, item: Item) -> None:
        fields = {name: getattr(item, name) for name in STATE_FIELDS}
        fields = {k: v for k, v in fields.items() if v not in (None, []) and v is not False}
        seq = self._event(item.id, CREATED, None, fields)
        self.db.execute(
            f"INSERT INTO items ({ITEM_COLUMNS}, prank, created_seq) VALUES"
            " (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                item.id,
                self.plan,
                item.content,
                item.status,
                item.priority,
                item.active_form,
                item.parent,
                item.position,
                item.evidence,
                item.reason,
                item.notes,
                self.writer,
                self.writer,
                self.at,
                self.at,
                item.estimate,
                _column("uses", item.uses),
                _column("needs_approval", item.needs_approval),
                PRIORITY_RANK[item.priority],
                seq,
            ),
        )
        if item.depends_on:
            self._set_deps(item.id, item.depends_on)

    def set(self, item_id: str, name: str, old: Any, new: Any) -> None:
        if old == new:
            return
        self._event(item_id, name, old, new)
        if name == "depends_on":
            self._set_deps(item_id, new or [])
            self.db.execute(
                "UPDATE items SET updated_by = ?, updated_at = ? WHERE id = ?",
                (self.writer, self.at, item_id),
            )
            return
        if name not in _SCALAR_FIELDS:
            raise ValueError(f"not a state field: {name}")
        extra = ", prank = ?" if name == "priority" else ""
        params: list[Any] = [_column(name, new), self.writer, self.at]
        if name == "priority":
            params.append(PRIORITY_RANK[new])
        self.db.execute(
            f"UPDATE items SET {name} = ?, updated_by = ?, updated_at = ?{extra} WHERE id = ?",
            (*params, item_id),
        )

    def remove(self, item: Item) -> None:
        fields = {name: getattr(item, name) for name in STATE_FIELDS}
        self._event(item.id, REMOVED, fields, None)
        self.db.execute("DELETE FROM items WHERE id = ?", (item.id,))
        self.db.execute("DELETE FROM deps WHERE item = ?", (item.id,))

    def _set_deps(self, item_id: str, blockers: Sequence[str]) -> None:
        self.db.execute("DELETE FROM deps WHERE item = ?", (item_id,))
        self.db.executemany(
            "INSERT INTO deps (plan, item, blocker) VALUES (?, ?, ?)",
            [(self.plan, item_id, b) for b in blockers],
        )
