"""The one table of person-only actions: what only a person may do, the command
line that does it, and where the ledger enforces it.

Three readers, one table: the pre-tool shell screen (`todoledger.screen`)
denies these command lines before an agent's shell runs them, the ledger's
refusals name them (`approval.require_person`), and docs/security.md's table is
generated from it (docs/docgen.py). Plain data and no imports: the screen runs
before every shell command an agent makes.
"""

from __future__ import annotations

from todoledger.core.record import dataclass


@dataclass(frozen=True)
class PersonAction:
    verb: str  # the name a refusal gives it (`require_person(verb, ...)`)
    words: tuple[str, ...]  # the command line's verb path: ("gate", "remove")
    flag: str  # a flag that makes the verb person-only ("--force"), or ""
    what: str
    usage: str
    enforced_in: str


PERSON_ACTIONS: tuple[PersonAction, ...] = (
    PersonAction("approve", ("approve",), "", "approve an item", "todoledger approve ID", "ledger/people.py"),
    PersonAction(
        "approve --plan",
        ("approve",),
        "--plan",
        "approve the plan as it stands",
        "todoledger approve --plan [NAME]",
        "ledger/people.py",
    ),
    PersonAction(
        "trust",
        ("trust",),
        "",
        "trust an untrusted check's exact text",
        "todoledger trust",
        "ledger/checkrecords.py",
    ),
    PersonAction(
        "gate remove",
        ("gate", "remove"),
        "",
        "remove a check (gate or assumption check)",
        "todoledger gate remove CHECK [--force]",
        "ledger/checkrecords.py",
    ),
    PersonAction(
        "gate real",
        ("gate", "real"),
        "",
        "say a check marked as a stand-in runs against the real thing (its passing may then prove)",
        "todoledger gate real CHECK",
        "ledger/checkrecords.py",
    ),
    PersonAction(
        "done --force",
        ("done",),
        "--force",
        "complete past a failing gate whose check a person wrote, or past another's lease",
        "todoledger done ID --force --reason ...",
        "ledger/items.py, ledger/unit.py",
    ),
    PersonAction(
        "accept-metric",
        ("accept-metric",),
        "",
        'accept typed numbers for a metric gate ("accepted by <person>")',
        "todoledger accept-metric ID NAME",
        "ledger/checkrecords.py",
    ),
    PersonAction(
        "sweep trust",
        ("sweep", "trust"),
        "",
        "trust every command a sweep runs",
        "todoledger sweep trust SWEEP",
        "ledger/sweeprows.py",
    ),
    PersonAction(
        "undo --any",
        ("undo",),
        "--any",
        "undo another writer's change",
        "todoledger undo --any (the last change is not the caller's)",
        "ledger/history.py",
    ),
    PersonAction(
        "person init",
        ("person", "init"),
        "",
        "register a ledger's first person key (trusted on first use: it signs every person-only action after)",
        "todoledger person init [NAME]",
        "ledger/persons.py",
    ),
    PersonAction(
        "token add",
        ("token", "add"),
        "",
        "register a token",
        "todoledger token add NAME [--agent]",
        "ledger/tokens.py",
    ),
    PersonAction(
        "token remove",
        ("token", "remove"),
        "",
        "remove a token",
        "todoledger token remove ID|NAME",
        "ledger/tokens.py",
    ),
    PersonAction(
        "person add",
        ("person", "add"),
        "",
        "sign another person's public key into a signed ledger",
        "todoledger person add FILE",
        "ledger/persons.py",
    ),
    PersonAction(
        "person remove",
        ("person", "remove"),
        "",
        "remove a person's key from a signed ledger",
        "todoledger person remove NAME",
        "ledger/persons.py",
    ),
)

# The options of the command line that take a value (`--plan main`), so that a
# parser of a shell command tells the value from the verb's arguments as click
# does. `approve --plan` takes its value only when one follows.
VALUE_OPTIONS = frozenset(
    {
        "--plan",
        "--writer",
        "--reason",
        "--evidence",
        "--note",
        "--priority",
        "--expect",
        "--status",
        "--max-age",
        "--timeout",
        "--in",
        "--watch",
        "--name",
        "--lease",
        "--by",
        "--accept",
    }
)
