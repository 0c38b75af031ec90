"""One sync of a plan to its panel, ledger -> files, and what the Claude Code hook
tells it about the model's own Task calls.

The interfaces call `after_write` once their ledger write is committed, and the
SessionStart hook calls `sync` before the recovery text. A sync reads the ledger
(one read), then under the list's lock (milliseconds) writes what changed, then
records what it wrote in the ledger (no op, no revision). A row whose file the
model changed since todoledger last wrote or saw it is never overwritten: the
hook mirrors the model's call into the ledger and records the file as seen
(`seen`), and the next sync writes from there. After Claude Code deletes an
all-completed list, nothing is written again until an item of the plan is open.
"""

from __future__ import annotations

import os

from todoledger.core.record import dataclass, field
from todoledger.panel import Target, files, target
from todoledger.panel.rows import MORE, Want, blocks_of, build, render

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from todoledger.ledger import Ledger


@dataclass
class Report:
    written: list[str] = field(default_factory=list)  # row ids created or rewritten
    removed: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # rows the model changed: left as they are
    skipped: str = ""  # why nothing was done: "unchanged", "reset", "busy"


def ensure_folder(where: Target) -> None:
    """Claude Code shows external rows only if the list's folder exists when the session starts."""
    os.makedirs(where.folder, exist_ok=True)


def after_write(lg: Ledger, cwd: str | None = None, plan: str | None = None) -> Report | None:
    """The interfaces' call after a ledger write: a sync if this project has a panel
    (for `plan`, when given, only if it is the panel's). Never raises: the write is done."""
    where = target(cwd)
    if where is None or (plan is not None and plan != where.plan):
        return None
    try:
        return sync(lg, where)
    except Exception:  # the panel is a view: its failure must not fail the write
        return None


def sync(lg: Ledger, where: Target) -> Report:
    state = lg.panel(where.list_id, where.plan)
    recorded: dict[str, tuple[str, str]] = state["rows"]
    if state["revision"] == state["plan_revision"]:
        present = files.listing(where.folder)  # the one read when the rows already match
        if present is not None and (state["reset"] or all(r in present for r in recorded)):
            return Report(skipped="unchanged")
    shown = lg.show(where.plan)
    leases = lg.leases(where.plan) if any(it["status"] == "in_progress" for it in shown["items"]) else []
    wants = build(shown, leases)
    revision = int(shown["revision"])
    report, rows, gone, reset = _write(where, wants, recorded, bool(state["reset"]), revision)
    if report.skipped == "busy":
        return report  # gave up within about 2 s: the next revision tries again
    lg.save_panel(where.list_id, plan=where.plan, revision=revision, reset=reset, rows=rows, gone=gone)
    return report


def _write(
    where: Target, wants: list[Want], recorded: dict[str, tuple[str, str]], was_reset: bool, revision: int
) -> tuple[Report, dict[str, tuple[str, str]], list[str], bool]:
    report = Report()
    folder = where.folder
    any_open = any(w.open for w in wants)
    os.makedirs(folder, exist_ok=True)
    with files.lock(folder) as got:
        if not got:
            report.skipped = "busy"
            return report, {}, [], was_reset
        present = files.listing(folder) or set()
        ours = {r: v for r, v in recorded.items() if r in present}
        # Claude Code deletes every row once all are completed: not ours to undo
        # until the plan has open work again.
        reset = not any_open and ((bool(recorded) and not ours) or was_reset)
        if reset:
            report.skipped = "reset"
            return report, {}, list(recorded), True
        gone = [r for r in recorded if r not in present]  # deleted by the model or Claude
        row_of = {item: r for r, (item, _) in ours.items()}
        _adopt(folder, present - set(recorded), [w for w in wants if w.key not in row_of], ours, row_of)
        wanted_keys = {w.key for w in wants}
        next_id = max([files.highwatermark(folder), *(_number(n) for n in present)]) + 1
        new: set[str] = set()
        for want in wants:
            if want.key not in row_of:
                row_of[want.key] = str(next_id)
                new.add(str(next_id))
                next_id += 1
        blocks = blocks_of(wants, row_of)
        written: dict[str, tuple[str, str]] = {}
        for want in wants:
            row = row_of[want.key]
            mark = _signature(want, row, row_of, blocks)
            if row in new:
                data = render(want, row, row_of, blocks.get(want.key, []), where.plan, revision)
                while not files.create(folder, row, data):  # taken meanwhile: the next number
                    row = str(next_id)
                    next_id += 1
                    data = render(want, row, row_of, blocks.get(want.key, []), where.plan, revision)
                written[row] = (want.key, f"{mark}:{files.digest(data)}")
                report.written.append(row)
                continue
            was, expect = _split(ours[row][1])
            if was == mark:
                continue  # the row shows the item as it is: not even read
            data = render(want, row, row_of, blocks.get(want.key, []), where.plan, revision)
            current = files.read(folder, row)
            if current is None or files.digest(current) != expect:
                report.kept.append(row)  # the model changed it: its call reaches the ledger first
            elif current == data:
                written[row] = (want.key, f"{mark}:{expect}")
            elif files.replace(folder, row, data, expect):
                written[row] = (want.key, f"{mark}:{files.digest(data)}")
                report.written.append(row)
        for row, (item, recorded_as) in ours.items():
            if item not in wanted_keys:
                if files.remove(folder, row, _split(recorded_as)[1]):
                    report.removed.append(row)
                gone.append(row)
        numbers = [_number(r) for r in written]
        if numbers:
            files.raise_highwatermark(folder, max(numbers))
    return report, written, gone, False


def _adopt(
    folder: str,
    foreign: set[str],
    unrowed: list[Want],
    ours: dict[str, tuple[str, str]],
    row_of: dict[str, str],
) -> None:
    """Rows the model created whose item the hook has mirrored but not yet recorded
    as the row's (a sync ran in between): the row is the item's, not a new one."""
    if not foreign or not unrowed:
        return
    import json

    by_subject: dict[str, list[tuple[str, bytes]]] = {}
    for row in sorted(foreign, key=_number):
        data = files.read(folder, row)
        try:
            subject = json.loads(data or b"{}").get("subject")
        except (ValueError, AttributeError):
            continue
        if isinstance(subject, str) and data is not None:
            by_subject.setdefault(subject, []).append((row, data))
    for want in unrowed:
        found = by_subject.get(want.subject)
        if found:
            row, data = found.pop(0)
            ours[row] = (want.key, f":{files.digest(data)}")
            row_of[want.key] = row


def _signature(want: Want, row: str, row_of: dict[str, str], blocks: dict[str, list[str]]) -> str:
    """What the row shows (not the revision it was written at): unchanged, it is not rewritten."""
    from todoledger.core.digests import blake2b

    shown = [row, want.subject, want.description, want.status, want.active_form or ""]
    shown += [",".join(blocks.get(want.key, [])), ",".join(row_of[k] for k in want.blockers if k in row_of)]
    return str(blake2b("\x1f".join(shown).encode("utf-8"), digest_size=8).hexdigest())


def _split(recorded: str) -> tuple[str, str]:
    """A row's record: the signature of what it shows, and the hash of its file."""
    mark, _, digest = recorded.rpartition(":")
    return mark, digest


def _number(name: str) -> int:
    return int(name) if name.isdigit() else 0


# --- what the Claude Code hook tells the panel ------------------------------------
def item_of(where: Target, row_id: object) -> str | None:
    """The item a row shows, from its own file (`metadata.todoledger`, which
    Claude Code keeps through the model's TaskUpdate)."""
    import json

    if not isinstance(row_id, (str, int)) or not str(row_id).isdigit():
        return None
    data = files.read(where.folder, str(row_id))
    try:
        meta = json.loads(data or b"{}").get("metadata", {}).get("todoledger", {})
    except (ValueError, AttributeError):
        return None
    if not isinstance(meta, dict) or meta.get("plan") != where.plan or not isinstance(meta.get("item"), str):
        return None
    return str(meta["item"])


def translate(where: Target, payload: dict[str, Any]) -> dict[str, Any]:
    """A TaskUpdate of the panel's rows, naming the items: the row ids are the
    list's, which the writer's own aliases do not know."""
    out = dict(payload)
    for key in ("taskId", "id", "task_id"):
        if key in out and (item := item_of(where, out[key])) is not None:
            out[key] = item
    for key in ("addBlocks", "addBlockedBy"):
        if isinstance(out.get(key), list):
            out[key] = [item_of(where, r) or r for r in out[key]]
    return out


def seen(lg: Ledger, where: Target, row_id: object, item: str | None) -> None:
    """The model wrote row `row_id` and the hook has mirrored it into the ledger
    (as `item`): the row is the sync's from here (a row the model created is
    adopted), and the file as it is now is what the ledger last saw."""
    if item is None or not isinstance(row_id, (str, int)) or not str(row_id).isdigit():
        return
    data = files.read(where.folder, str(row_id))
    if data is None or item == MORE:
        return
    lg.save_panel(where.list_id, plan=where.plan, rows={str(row_id): (item, f":{files.digest(data)}")})
