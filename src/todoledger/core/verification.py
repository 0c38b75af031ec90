"""Verification derived from receipts: what the ledger may claim about an item.

Pure: the caller supplies the checks, their latest receipts and a way to
tell whether a receipt's working-tree state still holds. Nothing here is
stored, so it can never disagree with the receipts.

Who proved it matters as much as what ran. A check's author has a principal
(`core.approval.principal`: a person, or an agent kind across its routes);
the claimant is whoever completed the item. A passing check proves the claim
only when the claimant does not control it: a person wrote, approved or
trusted it, or a principal that a token authenticates (`agent:ci` behind
`serve --tokens`) and that is not the claimant's wrote it. An agent's local
identity (its MCP client name, its shell's marker, a hook) is whatever its
process says, so a check written under one is no one else's.

One vocabulary for every output (show, board, report, MCP), weakest first
(`PRECEDENCE`); each gate has its state, and an item shows its weakest gate's:

- `failed`: a check's latest receipt fails or could not run;
- `stale`: it held, but the tree a receipt ran against has changed since,
  or a receipt is older than its check's maximum age (liveness: 10 minutes);
- `unverified`: a check never ran (or only untrusted checks exist);
- `reported`: completed with no check that can fail: the agent's word, nothing more;
- `stand-in`: it held against a stand-in (a demo's server or simulation, a
  check its author marked `--stand-in`): never proof;
- `typed`: a metric gate met by numbers a writer typed, even under a person's gate;
- `self-checked`: it holds, but its author is the claimant's own principal (or
  a local agent's, with no claimant yet): what waits on it starts once a
  person approves the check (`trust`);
- `cross-checked`: it holds, written by another agent principal than the
  claimant's (wherever it runs: two agents' principals on one machine cannot be
  told apart reliably, so this is below verified);
- `accepted by <person>`: a metric gate met by typed numbers a person accepted;
- `verified`: it holds, fresh, on evidence not typed, and a person wrote or
  trusted the check (an agent's token never trusts one).

Only `verified` counts as proven. What waits on an item starts when it is
verified (a metric gate also when accepted by a person); a gate that says
`accept: cross-checked` opens on cross-checked too (`opens`).

A completed item whose gate fails (or never ran) is "claimed completed, gate
failing": never in the completed count (`claimed_label`).
"""

from __future__ import annotations

from todoledger.core.jsontext import loads
from todoledger.core.model import REPORTED as REPORTED  # here, as its vocabulary; in model for `show`
from todoledger.core.record import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping
    from typing import Any

    from todoledger.core.checkspec import Check

VERIFIED = "verified"
SELF_CHECKED = "self-checked"
CROSS_CHECKED = "cross-checked"
STAND_IN = "stand-in"
ACCEPTED = "accepted by"  # "accepted by <person>"
UNVERIFIED = "unverified"
STALE = "stale"
FAILED = "failed"
RESULTS: tuple[str, ...] = ("holds", "fails", "error")
ROLES: tuple[str, ...] = ("gate", "assumption")  # what people add; `verify` runs these
ALL_ROLES: tuple[str, ...] = (*ROLES, "run")  # "run": a sweep combination's command, run by `sweep run`
MAX_OUTPUT_CHARS = 2_000
# How a check arrived: typed by a person (terminal or token), on the board, by an
# agent (`agent:<kind>`, the route of its principal), or in an import.
ROUTES: tuple[str, ...] = ("person", "board", "import")  # and "agent:<kind>"
# A completed item whose gates did not pass: what the agent said, kept apart from "completed".
from todoledger.core.model import CLAIMED_FAILING as CLAIMED_FAILING  # noqa: E402
from todoledger.core.model import CLAIMED_UNRUN as CLAIMED_UNRUN  # noqa: E402

TYPED = "typed"  # a metric's provenance: the writer typed it (done --metric, MCP metrics); a state too
MEASURED = "measured"  # todoledger measured it (a sweep run, a check's output)
# Weakest first: an item shows the first of its gates' states in this order.
PRECEDENCE: tuple[str, ...] = (
    FAILED,
    STALE,
    UNVERIFIED,
    REPORTED,
    STAND_IN,
    TYPED,
    SELF_CHECKED,
    CROSS_CHECKED,
    ACCEPTED,
    VERIFIED,
)


def word(state: str) -> str:
    """The vocabulary's word for a state: `accepted by ann` is `accepted by`."""
    return ACCEPTED if state.startswith(ACCEPTED + " ") else state


def rank(state: str) -> int:
    """Where a state stands, weakest 0; a word outside the vocabulary is weakest."""
    try:
        return PRECEDENCE.index(word(state))
    except ValueError:
        return 0


def weakest(states: Iterable[str]) -> str | None:
    found = list(states)
    return min(found, key=rank) if found else None


def accepted_by(person: str) -> str:
    """The state of a metric gate whose typed numbers a person accepted."""
    return f"{ACCEPTED} {person}"


def proven(state: str | None) -> bool:
    """Only verified counts as proven (the report's "Claims by writer", readiness)."""
    return state == VERIFIED


def opens(state: str | None, *, metric: bool = False, accept: str | None = None) -> bool:
    """Does a gate in this state let what waits on its item start? Verified; a
    metric gate also accepted by a person; a gate that accepts cross-checked, that too."""
    if state == VERIFIED:
        return True
    if metric and state is not None and state.startswith(ACCEPTED + " "):
        return True
    return accept == CROSS_CHECKED and state == CROSS_CHECKED


def route_of(writer: str, *, imported: bool = False) -> str:
    """How a check written by `writer` arrived: person, board, import, or agent:<kind>."""
    from todoledger.core.approval import principal

    if imported:
        return "import"
    who = principal(writer)
    if who.startswith("person:"):
        return "board" if writer.startswith("web:") or "@web:" in writer else "person"
    return who


def claimed_label(status: str, verification: str | None) -> str | None:
    """For a completed item whose gate failed or never ran: how to count it instead of completed."""
    if status != "completed":
        return None
    if verification == FAILED:
        return CLAIMED_FAILING
    if verification == UNVERIFIED:
        return CLAIMED_UNRUN
    return None


@dataclass(frozen=True)
class CheckRow:
    id: str
    plan: str
    item: str
    role: str
    check: Check
    trusted: bool
    created_by: str
    at: str
    trusted_by: str | None = None  # who approved its current text (a person's `trust`, or its local writer)
    route: str | None = None  # person | board | import | agent:<kind> (None: before routes were kept)
    # Where it runs and with which PATH: its writer's when it was written, whoever runs it
    # (None: a check from before they were kept, which runs where its caller runs).
    cwd: str | None = None
    path: str | None = None
    stand_in: bool = False  # against a stand-in (its author said so, or a demo): never proof

    @property
    def writer(self) -> str:
        return self.created_by

    @property
    def principal(self) -> str:
        from todoledger.core.approval import principal

        return principal(self.created_by)

    @property
    def person_backed(self) -> bool:
        """A person wrote it, or approved its exact current text."""
        from todoledger.core.approval import principal

        if self.route == "import":
            return (
                self.trusted
                and self.trusted_by is not None
                and principal(self.trusted_by).startswith("person:")
            )
        if self.principal.startswith("person:"):
            return True
        return (
            self.trusted and self.trusted_by is not None and principal(self.trusted_by).startswith("person:")
        )

    def independent(self, claimant: str | None) -> bool:
        """Does its passing prove `claimant`'s claim? A person's check (written,
        approved or trusted), or one an authenticated principal other than the
        claimant's wrote (a token's identity, `core.approval.proves`). A local
        agent's check never does, whichever agent claims: its identity is what
        a process said. With no claimant (the item is not completed), only a person's."""
        if self.person_backed:
            return True
        if claimant is None or self.route == "import":
            return False
        from todoledger.core.approval import proves

        return proves(self.created_by, claimant)

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "item": self.item,
            "role": self.role,
            "spec": self.check.text(),
            "options": self.check.options(),
            "trusted": self.trusted,
            "created_by": self.created_by,
            "principal": self.principal,
            "route": self.route or route_of(self.created_by),
            "runs_in": self.cwd,
            # A person who approved another writer's check (its author's own trust is no approval).
            "approved_by": self.trusted_by
            if self.person_backed and self.trusted_by and self.trusted_by != self.created_by
            else None,
            "at": self.at,
        } | ({"stand_in": True} if self.stand_in else {})


@dataclass(frozen=True)
class Receipt:
    check: str  # the check's id
    item: str
    spec: str  # the canonical text that ran
    result: str  # holds | fails | error
    code: int | None  # exit code or HTTP status
    duration_ms: int
    output: str  # the tail, bounded
    at: str
    by: str
    tree: (
        dict[str, Any] | None
    )  # {"root", "head", "dirty"} or {"watch": {path: hash}}; None: nothing to go stale
    env: dict[str, Any] | None = None  # a sweep run's environment: command, parameters, host, git, GPUs

    def as_dict(self) -> dict[str, Any]:
        extra = {"env": self.env} if self.env is not None else {}
        return extra | {
            "check": self.check,
            "item": self.item,
            "spec": self.spec.split("\n", 1)[0],
            "options": loads(self.spec.split("\n", 1)[1]) if "\n" in self.spec else {},
            "result": self.result,
            "code": self.code,
            "duration_ms": self.duration_ms,
            "output": self.output,
            "at": self.at,
            "by": self.by,
            "tree": self.tree,
        }

    def line(self) -> str:
        """One line: the result and the last line of output."""
        last = next((ln.strip() for ln in reversed(self.output.splitlines()) if ln.strip()), "")
        code = f" ({self.code})" if self.code is not None else ""
        return f"{self.result}{code}" + (f": {last[:200]}" if last else "")


def tail(text: str, limit: int = MAX_OUTPUT_CHARS) -> str:
    """The end of an output, without terminal control characters."""
    clean = "".join(ch for ch in text if ch in "\n\t" or (ch >= " " and ch != "\x7f"))
    return clean if len(clean) <= limit else "..." + clean[-(limit - 3) :]


def item_state(
    checks: Iterable[CheckRow],
    latest: Mapping[str, Receipt],
    fresh: Callable[[CheckRow, Receipt], bool],
    status: str,
    claimant: str | None = None,
    proves: Callable[[CheckRow, str | None], str] | None = None,
) -> str | None:
    """The verification of one item: the weakest of its gates' states
    (`gate_states`). `claimant` is the writer who completed it; `proves(row,
    claimant)` the state a passing, fresh check gives (default `passing_state`)."""
    found = gate_states(checks, latest, fresh, claimant, proves)
    if not found:
        return REPORTED if status == "completed" else None
    return weakest(found.values())


def gate_states(
    checks: Iterable[CheckRow],
    latest: Mapping[str, Receipt],
    fresh: Callable[[CheckRow, Receipt], bool],
    claimant: str | None = None,
    proves: Callable[[CheckRow, str | None], str] | None = None,
) -> dict[str, str]:
    """Each check's state by its id (checks that cannot fail left out)."""
    from todoledger.core.checkspec import cannot_fail

    rows = list(checks)
    specs = [c.check for c in rows]
    rows = [c for c in rows if cannot_fail(c.check, [s for s in specs if s is not c.check]) is None]
    judge = proves or passing_state
    out: dict[str, str] = {}
    for c in rows:
        r = latest.get(c.id)
        if r is None:
            out[c.id] = UNVERIFIED
        elif r.result != "holds":
            out[c.id] = FAILED
        elif not fresh(c, r):
            out[c.id] = STALE
        else:
            out[c.id] = judge(c, claimant)
    return out


def passing_state(row: CheckRow, claimant: str | None) -> str:
    """The state a passing, fresh check gives the claimant's claim: stand-in for
    a stand-in; verified for a person's check (written, or trusted by a person);
    cross-checked for another agent principal's; else self-checked."""
    if row.stand_in:
        return STAND_IN
    if row.person_backed:
        return VERIFIED
    if claimant is None or row.route == "import":
        return SELF_CHECKED
    from todoledger.core.approval import principal

    return CROSS_CHECKED if row.principal != principal(claimant) else SELF_CHECKED


def derive(
    items: Iterable[tuple[str, str]],
    checks: Iterable[CheckRow],
    latest: Mapping[str, Receipt],
    fresh: Callable[[CheckRow, Receipt], bool],
    claimants: Mapping[str, str] | None = None,
    proves: Callable[[CheckRow, str | None], str] | None = None,
) -> dict[str, str | None]:
    """Map item id -> verification, for (id, status) pairs; `claimants`: item ->
    the writer who completed it."""
    return derive_and_hold(items, checks, latest, fresh, claimants, proves)[0]


def held_back(
    items: Iterable[tuple[str, str]],
    checks: Iterable[CheckRow],
    latest: Mapping[str, Receipt],
    fresh: Callable[[CheckRow, Receipt], bool],
    claimants: Mapping[str, str] | None = None,
    proves: Callable[[CheckRow, str | None], str] | None = None,
) -> frozenset[str]:
    """Items with a gate that does not open (`opens`, gate by gate: a metric gate
    on accepted numbers, a gate that accepts cross-checked): what waits on them
    is not ready."""
    return derive_and_hold(items, checks, latest, fresh, claimants, proves)[1]


def derive_and_hold(
    items: Iterable[tuple[str, str]],
    checks: Iterable[CheckRow],
    latest: Mapping[str, Receipt],
    fresh: Callable[[CheckRow, Receipt], bool],
    claimants: Mapping[str, str] | None = None,
    proves: Callable[[CheckRow, str | None], str] | None = None,
) -> tuple[dict[str, str | None], frozenset[str]]:
    """`derive` and `held_back` at once, from one judgement of each item's gates
    (`gate_states`): a read of a gated plan needs both, and judging every gate twice
    was most of its cost (issue 30: `show --json` of 300 gated items)."""
    by_item: dict[str, list[CheckRow]] = {}
    for c in checks:
        by_item.setdefault(c.item, []).append(c)
    who = claimants or {}
    states: dict[str, str | None] = {}
    held: set[str] = set()
    for item, status in items:
        rows = by_item.get(item, [])
        found = gate_states(rows, latest, fresh, who.get(item) if status == "completed" else None, proves)
        # as `item_state`: the weakest gate's state; without one, the agent's word
        states[item] = weakest(found.values()) if found else (REPORTED if status == "completed" else None)
        by_id = {r.id: r for r in rows}
        for check_id, state in found.items():
            row = by_id[check_id]
            if not opens(state, metric=row.check.kind == "metric", accept=row.check.accept):
                held.add(item)
                break
    return states, frozenset(held)


def gated(verification: Mapping[str, str | None]) -> frozenset[str]:
    """Items that count as unfinished for those waiting on them: checked but not verified.

    `graph.derive(items, gated=...)` and `Ledger.next` use it, so an item that
    waits for a gated item is ready only once that item is verified; a
    self-checked item holds them back until a person approves its check.
    """
    return frozenset(
        i for i, v in verification.items() if v not in (None, REPORTED) and not opens(v, metric=True)
    )
