"""The one sanitiser for agent-written text on its way to a person or into an
agent's context (`prime`, SessionStart hooks, `show`, `history`, reports).

Agent text is untrusted. Raw, it could clear the screen (ESC[2J), plant a
hyperlink (OSC 8), ring the bell, overwrite what was printed (CR, backspace)
or make text read differently than it is (bidi overrides, zero-width
characters). Here control characters become U+FFFD, a visible mark that
something was there, and invisible formatting characters go. Markdown and
HTML escaping (`core/markdown.py`) build on this.

Lean on purpose: `prime` runs on the hook path, which imports no `typing`.
"""

from __future__ import annotations

REPLACEMENT = "\ufffd"

# Bidi embeddings, overrides, isolates and marks, and zero-width characters:
# they reorder or hide text without showing themselves.
INVISIBLE: frozenset[str] = frozenset(
    "\u061c\u200b\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e"
    "\u2060\u2061\u2062\u2063\u2064\u2066\u2067\u2068\u2069\u180e\ufeff"
)
# Separators that only break lines or space words: a space on one line.
_SPACES = frozenset("\t\u2028\u2029\x85")


def _char(ch: str, newlines: bool) -> str:
    if ch.isprintable():
        return ch
    if ch == "\n":
        return ch if newlines else " "
    if ch in INVISIBLE:
        return ""
    if ch in _SPACES or (ch.isspace() and ch > "\x9f"):  # no-break and other wide spaces
        return " "
    return REPLACEMENT  # C0/C1 controls (ESC, BEL, BS, CR...), surrogates, private and unassigned


def for_terminal(text: object, *, newlines: bool = False) -> str:
    """`text` safe to print: no control sequence, no hidden character.

    Line breaks become spaces unless `newlines` (a renderer that shows
    multi-line text, which also reads CRLF as a line break); a lone carriage
    return is never kept, as it lets a line overwrite itself.
    """
    if text is None:
        return ""
    value = text if isinstance(text, str) else str(text)
    if value.isprintable():  # the common case, checked in C
        return value
    if newlines:  # a Windows line end moves nothing that a newline would not
        value = value.replace("\r\n", "\n")
    return "".join([_char(ch, newlines) for ch in value])


def is_clean(text: str) -> bool:
    """Whether `text` shows exactly as it is (for names that must not pass for others)."""
    return all(ch.isprintable() and ch not in INVISIBLE for ch in text)


def strip_hidden(text: str) -> str:
    """`text` without any control or invisible character (for names made from agent text)."""
    return "".join([ch for ch in text if ch.isprintable() and ch not in INVISIBLE])
