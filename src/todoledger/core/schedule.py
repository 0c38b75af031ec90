"""The plan as a schedule: estimates, exclusive resources, the critical path
of the open work and the sets of ready items that can run at the same time.

Pure, no I/O. Durations are whole seconds.

Resources (`uses`): each entry names something an item holds exclusively
while it runs.
- `server`: the whole resource `server`.
- `gpu:2`: unit 2 of the pool `gpu`; `gpu:0-3`: units 0, 1, 2 and 3;
  `gpu:0,2,5-6`: a list of units and ranges.
Two entries collide when they name the same resource and either is the
whole resource or their units overlap: `gpu` collides with `gpu:1`,
`gpu:0-1` does not collide with `gpu:2-3`. Names are case-insensitive.

Lean on purpose: the view (and so the hook path) computes the schedule.
"""

from __future__ import annotations

import re

from todoledger.core.model import OPEN_STATUSES, PRIORITY_RANK, LedgerError
from todoledger.core.record import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence
    from typing import Any

MAX_UNITS = 4096  # a range wider than this is a typo, not a machine
MAX_USES = 32
MAX_ESTIMATE_SECONDS = 366 * 86400
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*([smhdw])")
_NAME = re.compile(r"[a-z0-9][a-z0-9_.\-/]{0,63}")
_UNITS = re.compile(r"\d{1,6}(-\d{1,6})?(,\d{1,6}(-\d{1,6})?)*")


# estimates -------------------------------------------------------------------
def parse_duration(text: str) -> int:
    """Seconds in `15m`, `2h`, `1h30m`, `1.5d`, `45s`; a bare number is minutes."""
    value = text.strip().lower().replace(" ", "")
    if re.fullmatch(r"\d+(\.\d+)?", value):
        seconds = round(float(value) * 60)
    else:
        parts = _DURATION.findall(value)
        if not parts or "".join(n + u for n, u in parts) != value:
            raise LedgerError(f"estimate {text!r} is not a duration: use forms like 15m, 2h, 1h30m, 1d")
        seconds = round(sum(float(n) * _UNIT_SECONDS[u] for n, u in parts))
    if seconds <= 0 or seconds > MAX_ESTIMATE_SECONDS:
        raise LedgerError(f"estimate {text!r} must be more than 0 and at most a year")
    return seconds


def format_duration(seconds: float) -> str:
    """`1h30m`, `15m`, `2d4h`, `45s`: the canonical spelling of an estimate."""
    total = round(seconds)
    if total <= 0:
        return "0m"
    out = ""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        n, total = divmod(total, size)
        if n:
            out += f"{n}{unit}"
    return out


def normalize_estimate(text: str) -> str:
    return format_duration(parse_duration(text))


# resources -------------------------------------------------------------------
def parse_use(text: str) -> tuple[str, frozenset[int] | None]:
    """(resource, units) of one `uses` entry; units None is the whole resource."""
    value = text.strip().lower()
    name, sep, spec = value.partition(":")
    if not _NAME.fullmatch(name):
        raise LedgerError(
            f"resource {text!r}: a name of letters, digits, '_', '.', '-' or '/' (like server or gpu:0-3)"
        )
    if not sep:
        return name, None
    if not _UNITS.fullmatch(spec):
        raise LedgerError(f"resource {text!r}: units are numbers and ranges, like gpu:0-3 or gpu:0,2")
    units: set[int] = set()
    for part in spec.split(","):
        low, _, high = part.partition("-")
        a, b = int(low), int(high or low)
        if b < a:
            raise LedgerError(f"resource {text!r}: the range {part} runs backwards")
        if b - a + 1 + len(units) > MAX_UNITS:
            raise LedgerError(f"resource {text!r}: more than {MAX_UNITS} units")
        units.update(range(a, b + 1))
    return name, frozenset(units)


def format_use(name: str, units: frozenset[int] | None) -> str:
    if units is None:
        return name
    ordered = sorted(units)
    parts: list[str] = []
    start = prev = ordered[0]
    for n in [*ordered[1:], None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        if n is not None:
            start = prev = n
    return f"{name}:{','.join(parts)}"


def split_uses(text: str) -> list[str]:
    """`server gpu:0,2` or `server,gpu:0-3` as entries: a comma before a name starts the next."""
    return [v for v in re.split(r"\s+|,(?=[A-Za-z])", text) if v]


def normalize_uses(entries: Iterable[str]) -> list[str]:
    """Canonical, sorted, without repeats; a resource named twice is merged."""
    merged: dict[str, frozenset[int] | None] = {}
    for entry in entries:
        if not isinstance(entry, str):
            raise LedgerError(f"a resource is text like server or gpu:0-3, not {entry!r}")
        name, units = parse_use(entry)
        if name in merged:
            old = merged[name]
            units = None if old is None or units is None else old | units
        merged[name] = units
    if len(merged) > MAX_USES:
        raise LedgerError(f"an item uses at most {MAX_USES} resources")
    return [format_use(name, merged[name]) for name in sorted(merged)]


def collide(a: Iterable[str], b: Iterable[str]) -> bool:
    """Do two items' resources overlap (so they cannot run at the same time)?"""
    mine: dict[str, frozenset[int] | None] = {}
    for name, units in (parse_use(x) for x in a):  # one resource named twice: both count
        old = mine.get(name, frozenset())
        mine[name] = None if old is None or units is None else old | units
    for name, units in (parse_use(x) for x in b):
        if name not in mine:
            continue
        other = mine[name]
        if other is None or units is None or other & units:
            return True
    return False


# the schedule ----------------------------------------------------------------
@dataclass(frozen=True)
class Schedule:
    critical_path: tuple[str, ...]  # open items, first to last
    length: int  # seconds: the estimates along the path
    unestimated: tuple[str, ...]  # open items without an estimate (counted as 0)
    parallel: tuple[tuple[str, ...], ...]  # ready items; the first set can start now
    held: tuple[str, ...]  # resources held by items in progress

    def as_dict(self) -> dict[str, Any]:
        return {
            "critical_path": list(self.critical_path),
            "length": format_duration(self.length) if self.length else None,
            "length_seconds": self.length,
            "unestimated": list(self.unestimated),
            "parallel": [list(s) for s in self.parallel],
            "held": list(self.held),
        }


def schedule(rows: Sequence[Mapping[str, Any]]) -> Schedule:
    """The schedule of a plan given as rows (`Ledger.show` items or view items
    as dicts): id, status, priority, position, parent, depends_on, estimate,
    uses and the derived ready."""
    path, length = critical_path(rows)
    unestimated = tuple(r["id"] for r in rows if r["status"] in OPEN_STATUSES and not r.get("estimate"))
    running = [r for r in rows if r["status"] == "in_progress"]
    held = normalize_uses(u for r in running for u in (r.get("uses") or ()))
    ready = sorted(
        (r for r in rows if r.get("ready")),
        key=lambda r: (PRIORITY_RANK.get(r["priority"], 1), r.get("position", 0.0)),
    )
    return Schedule(tuple(path), length, unestimated, parallel_sets(ready, held), tuple(held))


def effective_blockers(rows: Sequence[Mapping[str, Any]]) -> dict[str, list[str]]:
    """Per item, what it waits for: its own dependencies and its phases'
    (an item of a phase waits for what the phase waits for)."""
    by_id = {r["id"]: r for r in rows}
    out: dict[str, list[str]] = {}
    for r in rows:
        found = list(r.get("depends_on") or ())
        parent, depth = r.get("parent"), 0
        while parent in by_id and depth < 64:
            found += by_id[parent].get("depends_on") or ()
            parent, depth = by_id[parent].get("parent"), depth + 1
        out[r["id"]] = [b for b in dict.fromkeys(found) if b in by_id and b != r["id"]]
    return out


def critical_path(rows: Sequence[Mapping[str, Any]]) -> tuple[list[str], int]:
    """The longest chain of open items by estimate (seconds), each waiting for
    the one before; ties go to the chain that starts earliest in plan order.
    Finished and cancelled items take no more time; an item without an
    estimate counts as 0 (and is listed as unestimated)."""
    open_rows = [r for r in rows if r["status"] in OPEN_STATUSES]
    if not open_rows:
        return [], 0
    blockers = effective_blockers(rows)
    is_open = {r["id"] for r in open_rows}
    seconds: dict[Any, int] = {}  # a plan repeats few estimates: parse each once
    cost = {}
    for r in open_rows:
        est = r.get("estimate")
        if est not in seconds:
            seconds[est] = _seconds(est)
        cost[r["id"]] = seconds[est]
    order = {r["id"]: n for n, r in enumerate(rows)}
    # finish[x]: the longest chain ending at x; prev[x]: the item before it.
    finish: dict[str, int] = {}
    prev: dict[str, str | None] = {}
    for node in _topological([r["id"] for r in open_rows], blockers, is_open):
        best, before = 0, None
        for b in blockers[node]:
            if b in finish and (
                finish[b] > best or (finish[b] == best and before is not None and order[b] < order[before])
            ):
                best, before = finish[b], b
        finish[node], prev[node] = best + cost[node], before
    end = min(finish, key=lambda n: (-finish[n], order[n]))
    path = [end]
    while prev[path[-1]] is not None:
        path.append(prev[path[-1]])  # type: ignore[arg-type]
    return path[::-1], finish[end]


def _topological(nodes: list[str], blockers: Mapping[str, list[str]], keep: set[str]) -> list[str]:
    """Blockers before what waits for them; a cycle (damage: writes refuse
    them) is broken by leaving its members out."""
    waiting = {n: [b for b in blockers[n] if b in keep] for n in nodes}
    followers: dict[str, list[str]] = {n: [] for n in nodes}
    for n, bs in waiting.items():
        for b in bs:
            followers[b].append(n)
    left = {n: len(bs) for n, bs in waiting.items()}
    queue = [n for n in nodes if left[n] == 0]
    out: list[str] = []
    while queue:
        node = queue.pop()
        out.append(node)
        for f in followers[node]:
            left[f] -= 1
            if left[f] == 0:
                queue.append(f)
    return out


def parallel_sets(
    ready: Sequence[Mapping[str, Any]], held: Iterable[str] = ()
) -> tuple[tuple[str, ...], ...]:
    """Ready items (in the order to take them) in sets whose members share no
    resource. First fit: each item joins the first set it collides with
    nothing in; the first set also avoids what running items hold, so it is
    what can start now."""
    held = list(held)
    sets: list[list[Mapping[str, Any]]] = []
    uses_of: list[list[str]] = []
    for r in ready:
        mine = list(r.get("uses") or ())
        for n, members in enumerate(sets):
            if n == 0 and collide(mine, held):
                continue
            if not collide(mine, uses_of[n]):
                members.append(r)
                uses_of[n] += mine
                break
        else:
            if not sets and collide(mine, held):
                sets.append([])  # nothing of it can start now
                uses_of.append([])
            sets.append([r])
            uses_of.append(mine)
    return tuple(tuple(r["id"] for r in s) for s in sets)


def _seconds(estimate: Any) -> int:
    if not estimate:
        return 0
    try:
        return parse_duration(str(estimate))
    except LedgerError:
        return 0


# measured durations ----------------------------------------------------------
def measured(events: Iterable[Mapping[str, Any]], parse_at: Any) -> dict[str, int]:
    """Seconds each completed item took: from its first start (or its creation,
    if it was never marked in progress) to its last completion.
    `parse_at` turns an event's `at` into seconds."""
    started: dict[str, float] = {}
    created: dict[str, float] = {}
    done: dict[str, float] = {}
    for ev in events:
        item = ev.get("item")
        if item is None:
            continue
        at = parse_at(ev["at"])
        if ev["field"] == "created":
            created[item] = at
            if (ev.get("new") or {}).get("status") == "in_progress":
                started.setdefault(item, at)
        elif ev["field"] == "status":
            if ev["new"] == "in_progress":
                started.setdefault(item, at)
            elif ev["new"] == "completed":
                done[item] = at
            else:
                done.pop(item, None)
    out: dict[str, int] = {}
    for item, end in done.items():
        begin = started.get(item, created.get(item))
        if begin is not None and end >= begin:
            out[item] = round(end - begin)
    return out
