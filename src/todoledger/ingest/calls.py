"""What every transcript reader yields: todo calls, and what it skipped.

Readers stream: they hold at most a few pending calls (waiting for their
result line), never a whole transcript.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any


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
    error: str | None = None  # what the agent's harness answered, when it refused the call

    @property
    def refusal(self) -> str:
        """Why the call was refused, for the plan's story."""
        reason = (self.error or "").strip()
        return (
            f"the agent's tool refused it: {reason[:200]}" if reason else "the agent's tool reported an error"
        )

    @property
    def where(self) -> str:
        """The place in the transcript, for reports (an op's `source_at`)."""
        return f"L{self.line}" if self.line is not None else (self.message or "")

    @property
    def source_key(self) -> str:
        # The call's identity only: the same call found on another line (an
        # older copy of the transcript, a tail on stdin) is the same call.
        return f"{self.fmt}:{self.session}:{self.key}"


@dataclass
class Skipped:
    """Counts of what a reader passed over, never a reason to stop."""

    counts: Counter[str] = field(default_factory=Counter)

    def add(self, what: str, n: int = 1) -> None:
        self.counts[what] += n

    def as_dict(self) -> dict[str, int]:
        return dict(sorted(self.counts.items()))


def project_name(folder: str | None) -> str:
    if not folder:
        return "unknown"
    # Transcripts from Windows keep backslashes; PurePath on POSIX would not split them.
    name = PurePath(folder.replace("\\", "/")).name
    return name or "unknown"
