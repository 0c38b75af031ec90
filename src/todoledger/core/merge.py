"""Merge one writer's list into a plan: match, three-way merge, drop, reorder.

Pure: the service loads the relevant rows, calls `merge`, and applies the
result in one transaction. The rules (see docs/ARCHITECTURE.md):

- match by the writer's own id, then exact content, then a close rewording
  (only among the items the writer has seen, and never across numbers:
  "Benchmark 10 tokens" is not a rewording of "Benchmark 5 tokens");
- per field, base (what the writer saw) vs current vs incoming: a field the
  writer did not change never overwrites someone else's newer change;
- items the writer saw but left out are dropped (status `dropped`, not a
  cancel: nobody decided about the work); others are never touched;
- a dropped item listed again, by any writer, is revived in the status listed;
  a cancelled or completed one is not moved back by a list that did not see
  the change, and the writer's base keeps what its list said (`Seen.listed`),
  so that the contradiction stays visible while that list stands.
"""

from __future__ import annotations

from itertools import pairwise

from todoledger.core.model import DEFAULT_PRIORITY, DROPPED, OPEN_STATUSES, Incoming, Item
from todoledger.core.record import dataclass, field

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

MERGED_FIELDS = ("content", "status", "priority", "active_form")
REWORD_THRESHOLD = 0.72
# A dropped item and an added entry that are each other's only candidate pair up from here.
PAIR_THRESHOLD = 0.5
STATUS_RANK = {"pending": 0, "in_progress": 1, "completed": 2, "cancelled": 2, DROPPED: 2}
# Closed by a decision (a completion, a cancel): a list that says otherwise is contradicted, not obeyed.
DECIDED = frozenset({"completed", "cancelled"})
_NUMBER: Any = None  # re.compile(r"\d+(?:\.\d+)?") at its first use: `re` costs the agents' verbs start-up


@dataclass(frozen=True)
class Seen:
    """What a writer last saw of an item; `listed`, the open status its latest
    list gave an item the plan keeps closed (completed or cancelled by someone
    else): kept until its list says otherwise, whatever it reads meanwhile."""

    content: str | None
    status: str | None
    priority: str | None
    active_form: str | None
    listed: str | None = None

    @classmethod
    def of(cls, item: Item) -> Seen:
        return cls(item.content, item.status, item.priority, item.active_form)

    def get(self, name: str) -> str | None:
        value: str | None = getattr(self, name)
        return value


@dataclass
class Create:
    index: int
    item: Item


@dataclass
class SetField:
    item: str
    field: str
    old: Any
    new: Any


@dataclass
class Conflict:
    item: str
    field: str
    kept: Any
    rejected: Any
    winner: str  # "ledger" (current kept) or "writer" (incoming applied)


@dataclass
class Merge:
    matches: list[str] = field(default_factory=list)  # ledger id per incoming entry
    creates: list[Create] = field(default_factory=list)
    sets: list[SetField] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)  # left out of a whole list
    revived: list[str] = field(default_factory=list)  # dropped before, listed again: reopened
    base: dict[str, Seen] = field(default_factory=dict)  # the writer's new base (replaces or updates)
    aliases: dict[str, str] = field(default_factory=dict)  # new ext id -> ledger id


def is_backwards(current: str, new: str) -> bool:
    """Leaving finished work: completed to anything else, or cancelled to open."""
    return (current == "completed" and new != "completed") or (
        current == "cancelled" and new in OPEN_STATUSES
    )


_NORMALISED: dict[str, str] = {}  # an import meets the same texts in call after call


def normalise(text: str) -> str:
    found = _NORMALISED.get(text)
    if found is None:
        found = " ".join(text.split()).casefold()
        if len(_NORMALISED) >= 8192:
            _NORMALISED.clear()
        _NORMALISED[text] = found
    return found


_FEATURES: dict[str, tuple[str, list[str], frozenset[str]]] = {}
# "Remove the old API" and "Do not remove the old API" share nearly every letter.
NEGATIONS = frozenset({"not", "no", "never", "don't", "dont", "without", "skip", "avoid"})


def _features(text: str) -> tuple[str, list[str], frozenset[str]]:
    """A text's normal form, its numbers and its words: each entry is scored
    against every dropped item, call after call in an import."""
    global _NUMBER
    found = _FEATURES.get(text)
    if found is None:
        if _NUMBER is None:
            import re

            _NUMBER = re.compile(r"\d+(?:\.\d+)?")
        norm = normalise(text)
        found = (norm, _NUMBER.findall(norm), frozenset(norm.split()))
        if len(_FEATURES) >= 8192:
            _FEATURES.clear()
        _FEATURES[text] = found
    return found


def rewording_score(a: str, b: str, floor: float = REWORD_THRESHOLD) -> float:
    """Similarity of two texts in [0, 1]; 0 when their numbers or their
    negations differ, since "Benchmark 10 tokens" and "Benchmark 5 tokens" are
    different work, as are "Remove the old API" and "Do not remove it"; and
    0 below `floor`, which lets the cheap bounds skip the exact ratio."""
    from difflib import SequenceMatcher  # only fuzzy matching needs it; keep it off the hook path

    na, numbers_a, wa = _features(a)
    nb, numbers_b, wb = _features(b)
    if numbers_a != numbers_b or (wa & NEGATIONS) != (wb & NEGATIONS):
        return 0.0
    # A rewording keeps most of its words; unrelated lists rarely share half.
    if len(wa & wb) * 2 < min(len(wa), len(wb)):
        return 0.0
    matcher = SequenceMatcher(None, na, nb, autojunk=False)
    # The cheap upper bounds reject most pairs before the quadratic ratio().
    if matcher.real_quick_ratio() < floor or matcher.quick_ratio() < floor:
        return 0.0
    score = matcher.ratio()
    return score if score >= floor else 0.0


def is_rewording(a: str, b: str) -> bool:
    return rewording_score(a, b) >= REWORD_THRESHOLD


def _same_work(a: str, b: str) -> bool:
    return normalise(a) == normalise(b) or is_rewording(a, b)


@dataclass
class MergeInput:
    writer: str
    at: str
    incoming: list[Incoming]
    known: dict[str, Item]  # current state of every item the merge may touch
    base: dict[str, Seen]  # the writer's base (ids within `known` or gone)
    aliases: dict[str, str]  # writer's ext id -> ledger id
    whole: bool = True
    tail: Callable[[], float] = lambda: 0.0  # largest position in the plan (a query: asked only when needed)
    new_id: Callable[[], str] = lambda: ""
    revision: Callable[[], int] = lambda: 0  # the revision this write makes (asked only for a drop)


def merge(inp: MergeInput) -> Merge:
    out = Merge()
    matches = _match(inp)
    taken: set[str] = set()
    for index, entry in enumerate(inp.incoming):
        item_id = matches[index]
        if item_id is None:
            item = _create(inp, entry, index)
            out.creates.append(Create(index, item))
            item_id = item.id
        else:
            _merge_fields(inp, out, inp.known[item_id], entry)
        taken.add(item_id)
        out.matches.append(item_id)
        if entry.ext_id and inp.aliases.get(entry.ext_id) != item_id and entry.ext_id != item_id:
            out.aliases[entry.ext_id] = item_id
    if inp.whole:
        for item_id in inp.base:
            if item_id not in taken and item_id in inp.known:
                _drop(inp, out, inp.known[item_id])
    _positions(inp, out)
    return out


MAX_FUZZY_PAIRS = 2_500  # beyond this a rewritten list is treated as new work, not searched pairwise


def _match(inp: MergeInput) -> list[str | None]:
    found: list[str | None] = [None] * len(inp.incoming)
    used: set[str] = set()

    def claim(index: int, item_id: str) -> None:
        found[index] = item_id
        used.add(item_id)

    def texts(item_id: str) -> list[str]:
        """The item's text now, and as this writer last saw it (someone may have reworded it)."""
        seen = inp.base.get(item_id)
        current = inp.known[item_id].content
        return [current] if seen is None or seen.content in (None, current) else [current, seen.content or ""]

    for i, entry in enumerate(inp.incoming):
        ext = entry.ext_id
        if not ext:
            continue
        own_id = ext in inp.known and ext not in inp.aliases
        target = ext if own_id else inp.aliases.get(ext)
        if target and target in inp.known and target not in used:
            reused = (
                inp.whole
                and not own_id
                and entry.content
                and not any(_same_work(entry.content, t) for t in texts(target))
            )
            if reused:
                continue  # an id reused for other work: Claude Code 1.0 numbers each new list from "1"
            claim(i, target)
    if not inp.whole:
        # Patches name their items by id: a new id is a new item, even with a familiar subject.
        return found
    # Exact content: the writer's own items first, then others' open items,
    # then others' finished ones (a new session re-listing finished work).
    by_content: dict[str, list[str]] = {}
    ordered = sorted(
        inp.known.values(),
        key=lambda it: (it.id not in inp.base, it.status not in OPEN_STATUSES, it.position),
    )
    for item in ordered:
        for text in texts(item.id):
            by_content.setdefault(normalise(text), []).append(item.id)
    for i, entry in enumerate(inp.incoming):
        if found[i] is not None or not entry.content:
            continue
        for candidate in by_content.get(normalise(entry.content), []):
            if candidate not in used:
                claim(i, candidate)
                break
    # Rewording: only items the writer has seen and now leaves out, paired
    # with the entries it adds, never across numbers.
    spare = [b for b in inp.base if b not in used and b in inp.known]
    pending = [i for i, e in enumerate(inp.incoming) if found[i] is None and e.content and not e.ext_id]
    if spare and pending and len(spare) * len(pending) <= MAX_FUZZY_PAIRS:
        scores = {
            (i, item_id): max(
                rewording_score(inp.incoming[i].content or "", t, PAIR_THRESHOLD) for t in texts(item_id)
            )
            for i in pending
            for item_id in spare
        }
        # First the one-to-one pairings: an added entry whose only candidate is a
        # dropped item that has no other candidate. Identical edits of sibling
        # items ("10 tokens" / "5 tokens") then get identical results, whatever
        # their scores' third decimal.
        close = [pair for pair, score in scores.items() if score >= PAIR_THRESHOLD]
        per_entry: dict[int, int] = {}
        per_item: dict[str, int] = {}
        for i, item_id in close:
            per_entry[i] = per_entry.get(i, 0) + 1
            per_item[item_id] = per_item.get(item_id, 0) + 1
        for i, item_id in close:
            if per_entry[i] == 1 and per_item[item_id] == 1:
                claim(i, item_id)
        # Then the close rewordings among what is left, best score first.
        ranked = {item_id: rank for rank, item_id in enumerate(spare)}
        scored = sorted(
            (-score, abs(ranked[item_id] - i), i, item_id)
            for (i, item_id), score in scores.items()
            if score >= REWORD_THRESHOLD
        )
        for _, _, i, item_id in scored:
            if found[i] is None and item_id not in used:
                claim(i, item_id)
    return found


def _create(inp: MergeInput, entry: Incoming, index: int) -> Item:
    status = entry.status or "pending"
    return Item(
        id=inp.new_id(),
        plan="",
        content=entry.content or "",
        status=status,
        priority=entry.priority or DEFAULT_PRIORITY,
        active_form=entry.active_form,
        notes=entry.notes,
        reason=entry.reason if status == "cancelled" else None,
        created_by=inp.writer,
        updated_by=inp.writer,
        created_at=inp.at,
        updated_at=inp.at,
    )


def _merge_fields(inp: MergeInput, out: Merge, item: Item, entry: Incoming) -> None:
    seen = inp.base.get(item.id)
    incoming: dict[str, Any] = {
        "content": entry.content,
        "status": entry.status,
        "priority": entry.priority,
        "active_form": entry.active_form,
    }
    believed: dict[str, Any] = {}  # what the writer now thinks: its next base
    status = item.status  # what the ledger will hold
    listed: str | None = None
    for name in MERGED_FIELDS:
        new = incoming[name]
        cur = getattr(item, name)
        believed[name] = cur
        if new is None or new == cur:
            continue
        old = seen.get(name) if seen else None
        apply = False
        if name == "status" and cur == DROPPED:
            # Left out of a list is no decision about the work: listing it again revives it.
            apply = True
            out.revived.append(item.id)
        elif seen is None and name == "status" and STATUS_RANK[new] <= STATUS_RANK[cur]:
            # First sight of someone else's item: the writer may move it on,
            # but its unaware list must not move it back.
            out.conflicts.append(Conflict(item.id, name, cur, new, "ledger"))
            believed[name] = new
        elif name == "status" and old != cur and is_backwards(cur, new):
            # A backward move is only for a writer that saw the state it leaves:
            # a stale list must not reopen work someone finished meanwhile.
            out.conflicts.append(Conflict(item.id, name, cur, new, "ledger"))
            believed[name] = old
        elif seen is None or old == cur:
            apply = True
        elif new == old:
            # A stale echo: the writer repeats what it saw; the newer change stays.
            out.conflicts.append(Conflict(item.id, name, cur, new, "ledger"))
            believed[name] = old
        else:
            out.conflicts.append(Conflict(item.id, name, new, cur, "writer"))
            apply = True
        if apply:
            out.sets.append(SetField(item.id, name, cur, new))
            believed[name] = new
            if name == "status":
                status = new
        elif name == "status" and cur in DECIDED and new in OPEN_STATUSES:
            listed = new  # the plan keeps it closed while this writer's list works on it
    if entry.notes is not None and entry.notes != item.notes:
        out.sets.append(SetField(item.id, "notes", item.notes, entry.notes))
    if status == "cancelled" and entry.status == "cancelled" and entry.reason and item.reason != entry.reason:
        out.sets.append(SetField(item.id, "reason", item.reason, entry.reason))
    elif item.reason and status != item.status:
        # A reason belongs to the state it explains: it stays in the history, not on the item.
        out.sets.append(SetField(item.id, "reason", item.reason, None))
    out.base[item.id] = Seen(
        believed["content"], believed["status"], believed["priority"], believed["active_form"], listed
    )


_AT_REVISION = " at revision "


def drop_reason(writer: str, revision: int) -> str:
    """What a dropped item says of its drop: who left it out, and when."""
    return f"dropped by {writer}{_AT_REVISION}{revision}"


def drop_revision(reason: str | None) -> int:
    """The revision `drop_reason` names; 0 for a reason it did not write (a drop
    recorded before revisions were, or a reason someone set since)."""
    if not reason or not reason.startswith("dropped by "):
        return 0
    _, _, tail = reason.rpartition(_AT_REVISION)
    return int(tail) if tail.isdigit() else 0


def _drop(inp: MergeInput, out: Merge, item: Item) -> None:
    seen = inp.base[item.id]
    out.dropped.append(item.id)
    if item.status not in OPEN_STATUSES:
        return  # finished work stays finished; the writer merely stopped listing it
    if seen.status != item.status or seen.content != item.content:
        # Someone changed it since this writer looked: do not drop their work.
        out.conflicts.append(Conflict(item.id, "dropped", item.status, DROPPED, "ledger"))
        return
    out.sets.append(SetField(item.id, "status", item.status, DROPPED))
    out.sets.append(SetField(item.id, "reason", item.reason, drop_reason(inp.writer, inp.revision())))


def _positions(inp: MergeInput, out: Merge) -> None:
    """Keep the writer's order with as few moves as possible."""
    created = {c.item.id: c.item for c in out.creates}
    existing = [i for i in out.matches if i not in created]
    current = [inp.known[i].position for i in existing]
    if any(b <= a for a, b in pairwise(current)):
        if len(set(current)) == len(current):
            _move(inp, out, zip(existing, sorted(current), strict=True))
        else:
            _spread(inp, out, created)  # tied positions: a permutation cannot order them
            return
    moved = {s.item: s.new for s in out.sets if s.field == "position"}
    pos_of = {i: moved.get(i, inp.known[i].position) for i in existing}
    tail: float | None = None
    ids = out.matches
    for index, item_id in enumerate(ids):
        if item_id not in created:
            continue
        lo = next((pos_of[ids[j]] for j in range(index - 1, -1, -1) if ids[j] in pos_of), None)
        hi = next(
            (
                pos_of[ids[j]]
                for j in range(index + 1, len(ids))
                if ids[j] in pos_of and ids[j] not in created
            ),
            None,
        )
        if hi is None:
            if tail is None:
                tail = inp.tail()
            tail = max(tail, lo if lo is not None else tail) + 1.0
            position = tail
        elif lo is None:
            position = hi - 1.0
        else:
            position = (lo + hi) / 2
            if not lo < position < hi:  # halved too often: no number left between the two
                _spread(inp, out, created)
                return
        created[item_id].position = position
        pos_of[item_id] = position


def _move(inp: MergeInput, out: Merge, targets: Iterable[tuple[str, float]]) -> None:
    for item_id, pos in targets:
        if inp.known[item_id].position != pos:
            out.sets.append(SetField(item_id, "position", inp.known[item_id].position, pos))


def _spread(inp: MergeInput, out: Merge, created: dict[str, Item]) -> None:
    """Renumber the writer's whole list evenly from its first position."""
    out.sets = [s for s in out.sets if s.field != "position"]
    existing = [inp.known[i].position for i in out.matches if i not in created]
    start = min(existing) if existing else inp.tail() + 1.0
    targets = [(item_id, start + k) for k, item_id in enumerate(out.matches)]
    for item_id, pos in targets:
        if item_id in created:
            created[item_id].position = pos
    _move(inp, out, [(i, p) for i, p in targets if i not in created])
