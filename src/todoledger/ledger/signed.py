"""A signed ledger: once a person key is registered, a person's word is a signature.

The registered keys are events of the `(people)` history (no plan lists it):
`person_key` (a key registered, signed by itself for the first key, by a key
already registered for any later one), `person_key_removed` (signed), and
`person_reset` (every key removed, unsigned: a lost passphrase; flagged for
seven days). While a key is registered, every person-only action (the one table, `core/person_actions.py`)
needs a signature by one: the ledger asks the unit's signer for it (`Unit.signer`,
the CLI's passphrase prompt, a board holding the person's key) and refuses in one
line without it, whatever the route says. The signature covers a canonical
`statement`: ledger id, plan, action, target, the hash of the content approved and
the plan's revision; it is kept as a `signed` event in the action's own op, so the
hash chain holds it and `todoledger check` verifies it (`ledger.persons.audit`).
"""

from __future__ import annotations

from todoledger.core.model import LedgerError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    # The unit of work (ledger/unit.py), which calls `force` below: typed loosely
    # here, so that this module stays under it without an import cycle.
    Unit = Any

PEOPLE_PLAN = "(people)"  # the history of person keys: no plan, never listed
RESET_FLAG_DAYS = 7
SIGN_HINT = (
    "a person signs it at their own terminal (the passphrase of their key is asked on /dev/tty;"
    " a script passes --passphrase-fd N)"
)


def canonical(data: Any) -> bytes:
    import json

    return json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def content_hash(content: Any) -> str:
    import hashlib

    return hashlib.sha256(canonical(content)).hexdigest()


def statement(
    ledger: str, plan: str, action: str, target: str | None, content: Any, revision: int
) -> dict[str, Any]:
    """What a person's signature covers: nothing else in the event is signed (the
    chain head is recorded at commit, so other writers moving it do not void it)."""
    return {
        "v": 1,
        "ledger": ledger,
        "plan": plan,
        "action": action,
        "target": target,
        "content": content_hash(content),
        "revision": revision,
    }


def registry(u: Unit) -> dict[str, Any]:
    """The person keys as the `(people)` history tells them: {"ledger": id or
    None, "keys": {key id: {name, key, at, route, seq}}, "reset": the last reset or None,
    "signed_since": seq of the first key (None: never signed)}."""
    ledger_id: str | None = None
    keys: dict[str, dict[str, Any]] = {}
    reset: dict[str, Any] | None = None
    since: int | None = None
    for e in u.repo.events(PEOPLE_PLAN):
        new = e.new if isinstance(e.new, dict) else {}
        if e.field == "person_key":
            ledger_id = ledger_id or str(new.get("ledger") or "") or None
            keys[str(new.get("id"))] = {
                "name": new.get("name"),
                "key": new.get("key"),
                "id": new.get("id"),
                "at": e.at,
                "route": new.get("route"),
                "seq": e.seq,
                "by": e.writer,
            }
            since = since or e.seq
        elif e.field == "person_key_removed":
            keys.pop(str(new.get("id")), None)
        elif e.field == "person_reset":
            keys.clear()
            since = None  # the next key is trusted on first use again
            reset = {"at": e.at, "by": new.get("by"), "seq": e.seq, "keys": new.get("keys", [])}
    return {"ledger": ledger_id, "keys": keys, "reset": reset, "signed_since": since}


def is_signed(u: Unit) -> bool:
    with u.store.read():
        return bool(registry(u)["keys"])


def person(u: Unit, verb: str, writer: str) -> str:
    """The writer of a person-only `verb`. On a signed ledger the person is whoever
    signs (`cli:<name>` of their key), whatever the route: the route check is
    skipped, the signature replaces it; without a signature it is refused. On an
    unsigned ledger the route decides, as it always did."""
    from todoledger.core.approval import require_person

    with u.store.read():
        reg = registry(u)
    if not reg["keys"]:
        require_person(verb, writer)
        return writer
    signer = unlock(u, verb, reg)
    return str(signer.writer)


def unlock(u: Unit, verb: str, reg: dict[str, Any]) -> Any:
    """The unit's signer, asked for once (the CLI prompts for the passphrase here);
    refused in one line when there is none or its key is not registered."""
    names = ", ".join(sorted({str(k["name"]) for k in reg["keys"].values()}))
    if u.signer is None:
        raise LedgerError(
            f"{verb}: this ledger is signed (person keys: {names}): a person-only action needs a person's"
            f" signature, and none was given ({SIGN_HINT}); nothing was done"
        )
    # A callable unlocks one of the person's keys that this ledger registered (it asks the passphrase).
    signer = u.signer(set(reg["keys"])) if callable(u.signer) and not hasattr(u.signer, "sign") else u.signer
    u.signer = signer
    if signer.id not in reg["keys"]:
        raise LedgerError(
            f"{verb}: the key {signer.name} ({signer.id}) is not registered in this ledger (person keys:"
            f" {names}); a registered key signs it in with `todoledger person add`: nothing was done"
        )
    # The key must sign as the registered public key does: an object that only names a
    # registered key's id (the Python API takes any signer) proves nothing.
    from todoledger.personkeys import verify

    probe = canonical({"v": 1, "ledger": reg["ledger"], "probe": "unlock"})
    if not verify(str(reg["keys"][signer.id]["key"]), signer.sign(probe), probe):
        raise LedgerError(
            f"{verb}: the signer does not hold the private key of {signer.id}: nothing was done"
        )
    check_head(u, reg, signer)
    return signer


def check_head(u: Unit, reg: dict[str, Any], signer: Any) -> None:
    """The ledger still holds the last event this key signed: a ledger rolled back
    to a copy from before it, or replaced, is refused."""
    from todoledger.personkeys import head_of

    head = head_of(str(reg["ledger"]), signer.id)
    if head is None:
        return
    seq, chain = head
    if u.repo.chain_at(seq) != chain:
        raise LedgerError(
            f"this ledger does not hold event {seq} (chain {chain[:12]}…), the last change {signer.name}"
            " signed here: it was rolled back or replaced; nothing was done"
        )


def sign(u: Unit, verb: str, plan: str, target: str | None, content: Any) -> None:
    """Inside the action's transaction: the signature of this action, made now over
    the content and revision being committed, and kept as a `signed` event of the op.
    A no-op on an unsigned ledger."""
    reg = registry(u)
    if not reg["keys"]:
        return
    signer = unlock(u, verb, reg)
    from todoledger.personkeys import verify

    stated = statement(str(reg["ledger"]), plan, verb, target, content, u.repo.revision(plan))
    sig = signer.sign(canonical(stated))
    if not verify(str(reg["keys"][signer.id]["key"]), sig, canonical(stated)):
        raise LedgerError(f"{verb}: the signature does not verify against {signer.id}: nothing was done")
    record = {"key": signer.id, "name": signer.name, "statement": stated, "sig": sig}
    u.signatures.append((plan, target if target and plan != PEOPLE_PLAN else None, record))


def force(u: Unit, verb: str, writer: str, plan: str, target: str | None, content: Any) -> None:
    """A `--force` past what only a person overrides (another writer's lease, a
    person's gate): on a signed ledger the person's signature, made now and kept
    with the op that forces; on an unsigned one a person's route."""
    from todoledger.core.approval import is_person, person_only

    with u.store.read():
        signed = bool(registry(u)["keys"])
    if not signed:
        if not is_person(writer):
            raise LedgerError(person_only(verb, writer))
        return
    sign(u, verb, plan, target, content)


def last_signed(u: Unit, key: str) -> tuple[int, str] | None:
    """The newest `signed` event of `key`: (number, chain value)."""
    with u.store.read():
        found: tuple[int, str] | None = u.repo.last_signed(key)
    return found
