"""Plan names for imported sessions: `<project>/<session>`, short but never shared.

The session part is the id's first 8 characters after a known prefix. Ids
can share those (Codex's UUIDv7 ids begin with a timestamp), and two
sessions in one plan would merge their lists, so a session whose short
plan already holds another session's calls takes its full id instead (and,
were that taken too, the full id with a digest).
"""

from __future__ import annotations

import hashlib

from todoledger.core.sanitize import strip_hidden

TYPE_CHECKING = False
if TYPE_CHECKING:
    from todoledger.ledger import Ledger

PREFIXES = ("ses_", "session-")
SHORT = 8


def clean(part: str) -> str:
    # Names are shown on terminals and in reports: nothing hidden or controlling
    # (the one sanitiser's rule), and no `/`, which separates project from session.
    return strip_hidden(part).replace("/", "").strip()


def short_session(session: str) -> str:
    for prefix in PREFIXES:
        if session.startswith(prefix):
            session = session[len(prefix) :]
    return clean(session)[:SHORT] or "unknown"


def candidates(project: str, session: str) -> list[str]:
    """The names a session may take, in order of preference."""
    folder = clean(project) or "unknown"
    full = clean(session) or "unknown"
    digest = hashlib.sha256(session.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    names = [f"{folder}/{short_session(session)}", f"{folder}/{full}", f"{folder}/{full}~{digest}"]
    return list(dict.fromkeys(names))


class PlanNames:
    """Chooses each session's plan once per import, from what the ledger holds."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self._chosen: dict[tuple[str, str, str], str] = {}
        # Names given out in this import, so that a session none of whose calls
        # went in yet still keeps its name from the next session.
        self._owner: dict[str, tuple[str, str]] = {}

    def name(self, fmt: str, session: str, project: str) -> str:
        key = (fmt, session, project)
        chosen = self._chosen.get(key)
        if chosen is None:
            names = candidates(project, session)
            # Source keys are `<fmt>:<session>:<call>`: any other prefix is another session's call.
            mine = f"{fmt}:{session}:"
            chosen = next(
                (
                    n
                    for n in names
                    if self._owner.get(n, (fmt, session)) == (fmt, session) and not self._taken(n, mine)
                ),
                names[-1],
            )
            self._chosen[key] = chosen
            self._owner[chosen] = (fmt, session)
        return chosen

    def _taken(self, plan: str, mine: str) -> bool:
        return self.ledger.imported_from_others(plan, mine)
