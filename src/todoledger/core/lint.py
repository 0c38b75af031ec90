"""Item-level checks over an agent's list, already read by its dialect.

Pure functions. Errors make a write refused; warnings are kept with it.
Findings name places in the agent's own terms (`plan[1].step` for Codex)
so the agent that made the mistake can recognise it.
"""

from __future__ import annotations

from todoledger.core.merge import normalise
from todoledger.core.model import (
    MAX_CONTENT_CHARS,
    MAX_ITEMS_PER_WRITE,
    PRIORITIES,
    STATUSES,
    Finding,
    Incoming,
    LimitError,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "CUT_LIMITS",
    "check_item_count",
    "content_key",
    "field_where",
    "lint_items",
    "looks_truncated",
]

# Lengths at which tools and UIs commonly cut text; a text of exactly such a
# length that stops mid-word was probably cut, not written that way.
# Hard limits that code truncates at. Round lengths that people also write
# naturally (50, 80 characters) gave false alarms on real transcripts.
CUT_LIMITS: frozenset[int] = frozenset({64, 100, 128, 200, 255, 256, 500, 512, 1000, 1024})

# The key that holds an item's text in each dialect; lint speaks the agent's terms.
_CONTENT_KEYS: dict[str, str] = {
    "opencode": "content",
    "claude-code": "content",
    "claude-tasks": "subject",
    "codex": "step",
    "gemini": "description",
}
_SPACES = r"\s+"  # used on a finding only: `re` is not imported by a clean write (the hook path)


def content_key(dialect: str) -> str:
    return _CONTENT_KEYS.get(dialect, "content")


def field_where(item_where: str, key: str) -> str:
    """`todos[2]` + `status` -> `todos[2].status`; a patch's fields sit at the root."""
    return f"{item_where}.{key}" if item_where and item_where != "$" else key


def check_item_count(n: int) -> None:
    if n > MAX_ITEMS_PER_WRITE:
        raise LimitError(f"payload has {n:,} items; the limit is {MAX_ITEMS_PER_WRITE:,}")


def looks_truncated(text: str) -> str | None:
    """Why `text` looks cut off, or None."""
    stripped = text.rstrip()
    if stripped.endswith(("...", "…")):
        return "ends with an ellipsis"
    if len(text) in CUT_LIMITS and text[-1:].isalnum():
        return f"is exactly {len(text)} characters and stops mid-word"
    return None


def _valid_text(s: str) -> bool:
    # Lone surrogates survive json.loads but cannot be stored as UTF-8.
    if s.isascii():
        return True
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _suggest(value: str, vocab: Sequence[str]) -> str:
    import re

    guess = re.sub(_SPACES, "_", value.replace("-", "_"))
    if guess == "inprogress":
        guess = "in_progress"
    return f'; did you mean "{guess}"?' if guess in vocab and guess != value else ""


def _vocab_finding(it: Incoming, name: str) -> Finding | None:
    """A status or priority outside its vocabulary; a value of the other slot is named as such."""
    value: str | None = getattr(it, name)
    vocab, other, other_name = (
        (STATUSES, PRIORITIES, "priority") if name == "status" else (PRIORITIES, STATUSES, "status")
    )
    if value is None or value in vocab:
        return None
    allowed = ", ".join(vocab)
    if value in other:
        msg = f'{name} "{value}" is a {other_name} value; {name} must be one of {allowed}'
    else:
        hint = _suggest(value, vocab) if name == "status" else ""
        msg = f'{name} "{value}" is not one of {allowed}{hint}'
    return Finding("error", field_where(it.where, name), f"bad-{name}", msg)


def _plain(text: str) -> bool:
    """ASCII, not blank, within the limit, no NUL and not looking cut: nothing to say about it."""
    n = len(text)
    stripped = text.rstrip()
    return (
        bool(stripped)
        and n <= MAX_CONTENT_CHARS
        and n not in CUT_LIMITS
        and text.isascii()
        and "\x00" not in text
        and not stripped.endswith("...")
    )


def _content_findings(it: Incoming, key: str) -> list[Finding]:
    c = it.content
    if c is None:  # a patch that does not touch the text
        return []
    if _plain(c):
        return []  # the usual text, at once: an import lints thousands
    where = field_where(it.where, key)
    if not c.strip():
        return [Finding("error", where, "empty-content", f"{key} is empty")]
    if len(c) > MAX_CONTENT_CHARS:
        msg = f"{key} is {len(c):,} characters; the limit is {MAX_CONTENT_CHARS:,}"
        return [Finding("error", where, "content-too-long", msg)]
    if not _valid_text(c):
        return [Finding("error", where, "invalid-text", f"{key} contains invalid Unicode (a lone surrogate)")]
    if "\x00" in c:  # PostgreSQL text cannot hold it: refused alike on every backend
        return [Finding("error", where, "invalid-text", f"{key} contains a NUL character")]
    why = looks_truncated(c)
    if why:
        return [Finding("warning", where, "truncated", f"{key} {why}; it looks truncated")]
    return []


def lint_items(items: Sequence[Incoming], dialect: str, *, whole: bool = True) -> list[Finding]:
    """All item-level findings for one write, in payload order.

    `whole` lists get the list-wide checks (one in_progress, duplicates);
    a patch names single items, so those checks do not apply to it.
    """
    check_item_count(len(items))
    key = content_key(dialect)
    findings: list[Finding] = []
    for it in items:
        findings.extend(_content_findings(it, key))
        for f in (_vocab_finding(it, "status"), _vocab_finding(it, "priority")):
            if f is not None:
                findings.append(f)
    if whole:
        findings.extend(_list_findings(items, key))
    return findings


def _list_findings(items: Sequence[Incoming], key: str) -> list[Finding]:
    findings: list[Finding] = []
    first_seen: dict[str, str] = {}
    for it in items:
        if it.content is None or not it.content.strip():
            continue
        norm = normalise(it.content)
        if norm in first_seen:
            where = field_where(it.where, key)
            msg = f'same {key} as {first_seen[norm]}: "{it.content[:60]}"'
            findings.append(Finding("warning", where, "duplicate-item", msg))
        else:
            first_seen[norm] = it.where or "$"
    running = [it.where for it in items if it.status == "in_progress"]
    if len(running) > 1:
        container = running[0].split("[", 1)[0] or "$"
        msg = f"{len(running)} items are in_progress ({', '.join(running)}); only one should be at a time"
        findings.append(Finding("warning", container, "multiple-in-progress", msg))
    return findings
