"""What every transcript reader yields: todo calls, and what it skipped.

Readers stream: they hold at most a few pending calls (waiting for their
result line), never a whole transcript.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

# Separates a call's identity from where it sits in the transcript inside an
# ops row's source_key; ids (toolu_…, call_…, prt_…) never contain it.
WHERE_MARK = "@"


@dataclass
class TodoCall:
    """One todo tool call as found in a transcript."""

    fmt: str  # claude, codex, opencode, gemini
    session: str  # the agent's session id
    project: str  # a short project name (the working folder's basename)
    key: str  # the call's own id: unique within the session
    at: str | None  # ISO timestamp from the transcript
    writer: str
    dialect: str
    payload: Any
    response: Any = None
    line: int | None = None  # 1-based line in a JSONL transcript
    message: str | None = None  # message / part id where there are no lines
    counted: bool = True  # False for a stored final list that is no tool call
    failed: bool = False  # the agent's tool reported an error: the list did not change

    @property
    def where(self) -> str:
        return f"L{self.line}" if self.line is not None else (self.message or "")

    @property
    def plan(self) -> str:
        return plan_name(self.project, self.session)

    @property
    def source_key(self) -> str:
        # Stable across re-imports: format, session and call id; the place in
        # the transcript rides along so reports can cite it.
        return f"{self.fmt}:{self.session}:{self.key}{WHERE_MARK}{self.where}"


@dataclass
class Skipped:
    """Counts of what a reader passed over, never a reason to stop."""

    counts: Counter[str] = field(default_factory=Counter)

    def add(self, what: str, n: int = 1) -> None:
        self.counts[what] += n

    def as_dict(self) -> dict[str, int]:
        return dict(sorted(self.counts.items()))


def short_session(session: str) -> str:
    for prefix in ("ses_", "session-"):
        if session.startswith(prefix):
            session = session[len(prefix) :]
    return session[:8] or "unknown"


def project_name(folder: str | None) -> str:
    if not folder:
        return "unknown"
    # Transcripts from Windows keep backslashes; PurePath on POSIX would not split them.
    name = PurePath(folder.replace("\\", "/")).name
    return name or "unknown"


def plan_name(project: str, session: str) -> str:
    return f"{project}/{short_session(session)}"


def where_of(source_key: str | None) -> str:
    """The transcript place stored in an ops row's source_key, or ''."""
    if not source_key or WHERE_MARK not in source_key:
        return ""
    return source_key.rsplit(WHERE_MARK, 1)[1]
