"""Person keys in the ledger: registering the first (trust on first use, signed
by itself), signing in another (`person add`, signed by a registered key),
removing one (signed), a reset after a lost passphrase (unsigned, flagged for
seven days), the line every header shows, and `check`'s audit of the
signatures and of the columns that decide verification (`audit`)."""

from __future__ import annotations

from todoledger.core.model import LedgerError
from todoledger.core.timefmt import now
from todoledger.ledger.signed import (
    PEOPLE_PLAN,
    RESET_FLAG_DAYS,
    canonical,
    content_hash,
    registry,
    sign,
    statement,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from todoledger.ledger.unit import Unit


def _register(u: Unit, signer: Any, name: str, public: str, route: str) -> dict[str, Any]:
    from todoledger.personkeys import key_id

    kid = key_id(public)
    at = now()
    with u.transaction(PEOPLE_PLAN):
        reg = registry(u)
        if kid in reg["keys"]:
            raise LedgerError(f"{name}'s key {kid} is registered in this ledger already: nothing was done")
        first = not reg["keys"]
        if first and signer.id != kid:
            raise LedgerError("the first key of a ledger signs its own registration: nothing was done")
        ledger_id = reg["ledger"]
        if ledger_id is None:
            import secrets

            ledger_id = secrets.token_hex(16)
        record = {"name": name, "key": public, "id": kid, "ledger": ledger_id, "route": route}
        w = u.op(PEOPLE_PLAN, signer.writer, at, "person", summary=f"person key {kid} for {name}")
        w.annotate(None, "person_key", None, record)
        if first:  # trust on first use: the key signs its own registration
            stated = statement(ledger_id, PEOPLE_PLAN, "person add", kid, record, 0)
            w.annotate(
                None,
                "signed",
                None,
                {"key": kid, "name": name, "statement": stated, "sig": signer.sign(canonical(stated))},
            )
        else:
            sign(u, "person add", PEOPLE_PLAN, kid, record)
    return record | {"at": at, "first": first}


def init(u: Unit, signer: Any, route: str, writer: str) -> dict[str, Any]:
    """Register `signer`'s key as this ledger's first person key (trust on first use).
    Only a person's route registers it (`writer`): on an unsigned ledger the first key
    is trusted on first use, so an agent's would make the agent the ledger's person."""
    from todoledger.core.approval import require_person

    require_person("person init", writer)
    with u.store.read():
        reg = registry(u)
    if reg["keys"]:
        names = ", ".join(sorted({str(k["name"]) for k in reg["keys"].values()}))
        if signer.id in reg["keys"]:
            raise LedgerError(f"{signer.name}'s key {signer.id} is registered in this ledger already")
        raise LedgerError(
            f"this ledger has person keys already ({names}): a new key is signed in by one of them"
            " (`todoledger person export` where the new key is, then `todoledger person add` here): nothing was done"
        )
    return _register(u, signer, signer.name, signer.public, route)


def add(u: Unit, name: str, public: str) -> dict[str, Any]:
    """A registered key (the unit's signer) signs another person's key in."""
    from todoledger.ledger.signed import unlock

    with u.store.read():
        reg = registry(u)
    if not reg["keys"]:
        raise LedgerError(
            "this ledger has no person key yet: its first is registered by `todoledger person init`"
        )
    signer = unlock(u, "person add", reg)
    return _register(u, signer, name, public, "person add")


def remove(u: Unit, ref: str) -> dict[str, Any]:
    """A registered key signs the removal of a key (its id, or its holder's name)."""
    from todoledger.ledger.signed import unlock

    at = now()
    with u.transaction(PEOPLE_PLAN):
        reg = registry(u)
        found = [k for k in reg["keys"].values() if ref in (k["id"], k["name"])]
        if len(found) != 1:
            raise LedgerError(f"no single registered key is {ref!r}: nothing was done")
        signer = unlock(u, "person remove", reg)
        gone = found[0]
        w = u.op(PEOPLE_PLAN, signer.writer, at, "person", summary=f"removed person key {gone['id']}")
        record = {"id": gone["id"], "name": gone["name"]}
        w.annotate(None, "person_key_removed", None, record)
        sign(u, "person remove", PEOPLE_PLAN, str(gone["id"]), record)
    return record


def reset(u: Unit, by: str) -> dict[str, Any]:
    """Every key removed, unsigned (a lost passphrase): the CLI allows it only at a
    terminal, to the OS user who owns the ledger file; headers flag it for seven days."""
    at = now()
    with u.transaction(PEOPLE_PLAN):
        reg = registry(u)
        if not reg["keys"]:
            raise LedgerError("this ledger has no person key: nothing to reset")
        ids = sorted(reg["keys"])
        w = u.op(PEOPLE_PLAN, by, at, "person", summary=f"person keys reset by {by}")
        w.annotate(None, "person_reset", None, {"by": by, "keys": ids, "ledger": reg["ledger"]})
    return {"by": by, "at": at, "keys": ids}


def standing(u: Unit) -> dict[str, Any]:
    """What every header says about people: the keys (`person keys: ann (registered
    at …)`), whether the ledger is signed, and a reset of the last seven days."""
    from todoledger.core.timefmt import shift

    with u.store.read():
        reg = registry(u)
    keys = [
        {k: v[k] for k in ("name", "id", "at", "route", "by")} | {"first": v["seq"] == reg["signed_since"]}
        for v in sorted(reg["keys"].values(), key=lambda k: int(k["seq"]))
    ]
    reset = reg["reset"]
    recent = reset is not None and shift(str(reset["at"]), RESET_FLAG_DAYS * 86400) > now()
    if keys:
        parts = []
        for k in keys:
            if k["first"]:
                parts.append(
                    f"{k['name']} (trusted on first use, registered at {k['at']} from the {k['route']})"
                )
            else:
                parts.append(f"{k['name']} (registered at {k['at']}, signed in by {k['by']})")
        line = "person keys: " + "; ".join(parts)
    else:
        line = "unsigned: an agent running as you could act as you (sign it: todoledger person init)"
    if recent and reset is not None:
        line += (
            f" | WARNING: person keys were reset at {reset['at']} by {reset['by']} (a lost passphrase, or"
            " someone acting as that user): check what was approved since"
        )
    return {
        "signed": bool(keys),
        "keys": keys,
        "reset": reset if recent else None,
        "line": line,
        "ledger": reg["ledger"],
    }


def remember_head(u: Unit, signer: Any) -> None:
    """After a signed action: the key's folder remembers the ledger's event it signed last."""
    from todoledger.ledger.signed import last_signed
    from todoledger.personkeys import remember_head as keep

    with u.store.read():
        reg = registry(u)
    found = last_signed(u, signer.id)
    if found is not None and reg["ledger"]:
        keep(str(reg["ledger"]), signer.id, *found)


# check ------------------------------------------------------------------------
# Events that only a person's action writes (core/person_actions.py's actions): on a signed
# ledger each needs a valid signature in its own op.
PERSON_FIELDS = ("approved", "plan_approved", "trust", "metric_accepted", "sweep_approved", "token")


def audit(u: Unit) -> list[str]:
    """`todoledger check`'s findings about people: every signature verified, every
    person-only event since the ledger became signed that lacks one, and the columns
    that decide verification (a check's author and trust, a receipt's result, the
    registered tokens) against the events that recorded them."""
    from todoledger.personkeys import verify

    problems: list[str] = []
    with u.store.read():
        people = u.repo.events(PEOPLE_PLAN)
        signed_events = u.repo.fields_events(("signed",))
        person_events = u.repo.fields_events((*PERSON_FIELDS, "check", "forced"))
        problems += _columns(u)
    keys: dict[str, str] = {}  # key id -> public key, as registered so far (by event number)
    ledger_id: str | None = None
    signed_since: int | None = None
    # (event number, signed from there on?): a reset makes the ledger unsigned until a new first key.
    spans: list[tuple[int, bool]] = [(0, False)]
    valid_ops: set[int] = set()
    statements: dict[int, dict[str, Any]] = {}  # op -> the statement its valid signature covers
    by_op: dict[int, list[Any]] = {}
    for e in signed_events:
        by_op.setdefault(e.op, []).append(e)
    # Walk the registrations and the signatures in event order: a key signs only once registered.
    timeline = sorted([*people, *signed_events], key=lambda e: e.seq)
    for e in timeline:
        new = e.new if isinstance(e.new, dict) else {}
        if e.field == "person_key":
            kid, public = str(new.get("id")), str(new.get("key"))
            first = not keys
            sig = next((s for s in by_op.get(e.op, []) if isinstance(s.new, dict)), None)
            signer_key = public if first else keys.get(str(sig.new.get("key")) if sig else "")
            ok = (
                sig is not None
                and signer_key is not None
                and (not first or sig.new.get("key") == kid)
                and sig.new.get("statement", {}).get("content") == content_hash(new)
                and verify(signer_key, str(sig.new.get("sig")), canonical(sig.new.get("statement")))
            )
            if not ok:
                problems.append(
                    f"{PEOPLE_PLAN}: event {e.seq} registers key {kid} ({new.get('name')}) without a valid"
                    " signature by a registered key: a key written around todoledger"
                )
                continue
            ledger_id = ledger_id or str(new.get("ledger"))
            signed_since = signed_since or e.seq
            keys[kid] = public
            spans.append((e.seq, True))
        elif e.field == "person_key_removed":
            keys.pop(str(new.get("id")), None)
            spans.append((e.seq, bool(keys)))
        elif e.field == "person_reset":
            keys.clear()
            spans.append((e.seq, False))
        elif e.field == "signed":
            raw = new.get("statement")
            stated: dict[str, Any] = raw if isinstance(raw, dict) else {}
            signer_public = keys.get(str(new.get("key")))
            if e.plan == PEOPLE_PLAN and any(p.op == e.op and p.field == "person_key" for p in people):
                continue  # checked with its registration above
            if signer_public is None or not verify(signer_public, str(new.get("sig")), canonical(stated)):
                problems.append(
                    f"{e.plan}/{e.item or '-'}: event {e.seq} carries a signature by key {new.get('key')} that"
                    " does not verify against a key registered at that point: forged or altered"
                )
            elif stated.get("ledger") != ledger_id or stated.get("plan") != e.plan:
                problems.append(
                    f"{e.plan}/{e.item or '-'}: event {e.seq}'s signature was made for another ledger or plan"
                    f" ({stated.get('ledger')}/{stated.get('plan')}): copied, not made here"
                )
            else:
                valid_ops.add(e.op)
                statements[e.op] = stated
    if signed_since is None:
        return problems
    writers = u.repo.op_writers(sorted({e.op for e in person_events if e.seq > signed_since}))
    from todoledger.core.approval import is_person

    trusts: dict[int, list[Any]] = {}  # op -> its trust events, in order: what a signed `trust` covers
    for e in person_events:
        if e.field == "trust":
            trusts.setdefault(e.op, []).append(e.new)
    problems += _agents_forced(person_events, writers, valid_ops, spans)
    for e in person_events:
        if e.op in valid_ops and not _covers(statements[e.op], e, trusts.get(e.op, [])):
            problems.append(
                f"{e.plan}/{e.item or '-'}: event {e.seq} ({e.field}, op {e.op}) is not what its op's signature"
                f" covers ({statements[e.op].get('action')}): a signature copied or changed around todoledger"
            )
            continue
        if e.op in valid_ops and e.field in ("approved", "plan_approved"):
            if statements[e.op].get("content") != content_hash(e.new):
                problems.append(
                    f"{e.plan}/{e.item or '-'}: event {e.seq} approves content its signature does not cover:"
                    " changed around todoledger"
                )
            continue
        if e.op in valid_ops or not _signed_at(spans, e.seq):
            continue
        writer, _kind = writers.get(e.op, (e.writer, ""))
        if e.field == "check" and not (is_person(writer) and (e.new is not None or e.old is not None)):
            continue  # an agent's check, or one added by an agent: not a person's action
        if e.field == "forced" and not is_person(writer):
            continue  # an agent's own override of what it may override
        problems.append(
            f"{e.plan}/{e.item or '-'}: event {e.seq} ({e.field}, op {e.op} by {writer}) is a person-only"
            " action without a person's signature on a signed ledger"
        )
    return problems


def _agents_forced(
    events: list[Any], writers: dict[int, tuple[str, str]], valid_ops: set[int], spans: list[tuple[int, bool]]
) -> list[str]:
    """An agent's `forced` events that only a person's word allows, on a signed ledger:
    past another's lease (a person's signed override only), or a completion past a gate
    whose check a person wrote, which needs the person's signed approval of that item
    naming the agent's task (`ledger.tasks.gate_consent`) as the last approval before it."""
    from todoledger.core.approval import is_person
    from todoledger.core.verification import ROLES

    problems: list[str] = []
    persons_gates: dict[str, set[str]] = {}  # item -> the gates a person wrote on it, so far
    approved: dict[tuple[str, str], Any] = {}  # (plan, item) -> its last `approved` event, so far
    for e in sorted(events, key=lambda ev: ev.seq):
        writer = writers.get(e.op, (e.writer, ""))[0]
        new = e.new if isinstance(e.new, dict) else {}
        if e.field == "check" and e.item:
            gone = e.old if isinstance(e.old, dict) else {}
            if new and is_person(writer) and new.get("role", "gate") in ROLES:
                persons_gates.setdefault(e.item, set()).add(str(new.get("id")))
            elif gone:
                persons_gates.get(e.item, set()).discard(str(gone.get("id")))
            continue
        if e.field == "approved" and e.item:
            approved[(e.plan, e.item)] = e
            continue
        if e.field != "forced" or is_person(writer) or e.op in valid_ops or not _signed_at(spans, e.seq):
            continue
        where = f"{e.plan}/{e.item or '-'}: event {e.seq} (forced, op {e.op} by {writer})"
        if new.get("past") == "lease":
            problems.append(
                f"{where} overrides another's lease without a person's signature on a signed ledger"
            )
            continue
        if new.get("past") != "gates" or not persons_gates.get(str(e.item)):
            continue  # an agent's own override of what it may override
        consent = approved.get((e.plan, str(e.item)))
        named = (
            consent.new.get("lets_through") if consent is not None and isinstance(consent.new, dict) else None
        )
        by = writers.get(consent.op, (consent.writer, ""))[0] if consent is not None else None
        if (
            consent is None
            or consent.op not in valid_ops
            or not isinstance(named, list)
            or not any(isinstance(n, dict) and n.get("task") == new.get("task") for n in named)
            or new.get("approved_by") != by
        ):
            problems.append(
                f"{where} completes it past a person's gate without a person's signature or their signed"
                " consent to its task on a signed ledger"
            )
    return problems


# The events each signed action writes: a valid signature vouches only for these in
# its op (a signature of one action copied into an op that records another proves nothing).
PRODUCES: dict[str, frozenset[str]] = {
    "approve": frozenset({"approved"}),
    "approve --plan": frozenset({"plan_approved", "approved"}),
    "trust": frozenset({"trust"}),
    "gate add (a person's)": frozenset({"check"}),
    "gate remove": frozenset({"check"}),
    "accept-metric": frozenset({"metric_accepted"}),
    "sweep trust": frozenset({"sweep_approved", "trust", "check"}),
    "token add": frozenset({"token"}),
    "token remove": frozenset({"token"}),
}


def _covers(stated: dict[str, Any], e: Any, trusts: list[Any]) -> bool:
    """Does the signature's statement cover person-only event `e` of its op? Its action
    writes that kind of event, and a signed `trust` covers exactly the checks its op trusts."""
    action = str(stated.get("action"))
    allowed = PRODUCES.get(action)
    if allowed is not None and e.field not in allowed:
        return False
    return not (action == "trust" and e.field == "trust" and stated.get("content") != content_hash(trusts))


def _signed_at(spans: list[tuple[int, bool]], seq: int) -> bool:
    """Was the ledger signed when event `seq` was written (a key registered before it)?"""
    from bisect import bisect_left

    return spans[max(0, bisect_left(spans, (seq, False)) - 1)][1]


def _columns(u: Unit) -> list[str]:
    """The columns that decide verification, against the events (inside a read)."""
    from todoledger.store.checks import CheckRepo

    problems: list[str] = []
    repo = CheckRepo(u.store)
    events = u.repo.fields_events(("check", "trust", "receipt"))
    writers = u.repo.op_writers(sorted({e.op for e in events}))
    authors: dict[str, str] = {}
    trusters: dict[str, set[str]] = {}
    results: dict[str, list[str]] = {}
    for e in events:
        new = e.new if isinstance(e.new, dict) else {}
        writer = writers.get(e.op, (e.writer, ""))[0]
        if e.field == "check" and new:
            authors[str(new.get("id"))] = writer
            if new.get("trusted", True):
                trusters.setdefault(str(new.get("id")), set()).add(writer)
        elif e.field == "trust":
            trusters.setdefault(str(new.get("id")), set()).add(writer)
        elif e.field == "receipt":
            results.setdefault(str(new.get("check")), []).append(str(new.get("result")))
    for check_id, plan, created_by, trusted_by in repo.provenance():
        said = authors.get(check_id)
        if said is not None and said != created_by:
            problems.append(
                f"{plan}: check {check_id} names {created_by} as its author; its event says {said}:"
                " a column changed around todoledger"
            )
        if trusted_by is not None and trusted_by not in trusters.get(check_id, set()):
            problems.append(
                f"{plan}: check {check_id} reads trusted by {trusted_by}; no event records that trust:"
                " a column changed around todoledger"
            )
    for check_id, plan, stored in repo.receipt_results():
        said_results = results.get(check_id, [])
        if stored != said_results:
            problems.append(
                f"{plan}: the receipts of check {check_id} read {', '.join(stored)}; its events say"
                f" {', '.join(said_results) or 'none'}: a receipt changed around todoledger"
            )
    return problems
