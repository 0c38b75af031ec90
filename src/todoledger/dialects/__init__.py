"""Agents' todo formats: read any agent's payload, render the ledger back.

`parse` accepts each agent's tool input verbatim, plus the envelopes it
travels in (hook stdin, a `tool_use` block, a Codex function call). The
tool's name, when present, decides the dialect; otherwise the payload's
shape does. Every failure is a LedgerError with one clear sentence: this
runs inside agents' hooks, where a traceback helps nobody.
"""

from __future__ import annotations

from todoledger.core.model import Finding, LedgerError, LimitError, LintError, ParsedWrite
from todoledger.core.unicode import unicode_findings
from todoledger.dialects import claude_code, claude_tasks, codex, gemini, opencode
from todoledger.dialects._base import kind

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType
    from typing import Any

__all__ = ["DIALECTS", "TOOL_DIALECTS", "detect", "parse", "read", "render"]

DIALECTS: tuple[str, ...] = ("opencode", "claude-code", "claude-tasks", "codex", "gemini")
_MODULES: dict[str, ModuleType] = {
    "opencode": opencode,
    "claude-code": claude_code,
    "claude-tasks": claude_tasks,
    "codex": codex,
    "gemini": gemini,
}
TOOL_DIALECTS: dict[str, str] = {tool: name for name, mod in _MODULES.items() for tool in mod.TOOLS}
# One Claude hook sees TodoWrite and Task* calls alike; let the tool decide which.
_CLAUDE = frozenset({"claude-code", "claude-tasks"})
# Envelopes nest at most a few deep (hook -> tool call -> JSON string).
_MAX_UNWRAP = 8
_Path = list[str | int]


class _Unwrapped:
    """The payload once its envelopes are removed, and what they told us."""

    def __init__(self, value: Any, response: Any) -> None:
        self.value = value
        self.response = response
        self.tool: str | None = None
        self.findings: list[Finding] = []
        # Duplicate-key findings of the latest JSON text, and the path from
        # that text's root to `value`, so they can be re-rooted at `value`.
        self._pending: list[Finding] = []
        self._prefix: _Path = []

    def descend(self, path: _Path, value: Any) -> None:
        self._prefix.extend(path)
        self.value = value

    def load(self, text: str | bytes) -> None:
        from todoledger.core.jsonload import load_checked  # `json` and `re`: only for JSON text

        self._flush()
        self.value, self._pending = load_checked(text)

    def set_tool(self, tool: Any) -> None:
        if not isinstance(tool, str) or self.tool is not None:
            return
        if tool not in TOOL_DIALECTS:
            known = ", ".join(TOOL_DIALECTS)
            raise LedgerError(f'"{tool}" is not a todo tool; expected one of {known}')
        self.tool = tool

    def done(self) -> list[Finding]:
        self._flush()
        return self.findings

    def _flush(self) -> None:
        if self._pending:  # only JSON text has them, and only then is `json_path` (json, re) loaded
            from todoledger.core.jsonload import json_path

            prefix = json_path(self._prefix) if self._prefix else ""
            for f in self._pending:
                self.findings.append(_reroot(f, prefix))
        self._pending, self._prefix = [], []


def _reroot(f: Finding, prefix: str) -> Finding:
    if not prefix or not f.where.startswith(prefix):
        return f
    rest = f.where[len(prefix) :]
    if rest == "":
        return Finding(f.level, "$", f.code, f.message)
    if rest[0] == ".":
        return Finding(f.level, rest[1:], f.code, f.message)
    if rest[0] == "[":
        return Finding(f.level, rest, f.code, f.message)
    return f


def _envelope(d: dict[str, Any]) -> tuple[Any, _Path, Any, Any] | None:
    """(tool name, path to the inner payload, inner payload, response) or None."""
    if "tool_input" in d:  # hook stdin (Claude, Codex, Gemini)
        return d.get("tool_name"), ["tool_input"], d["tool_input"], d.get("tool_response")
    state = d.get("state")
    if isinstance(d.get("tool"), str) and isinstance(state, dict) and "input" in state:  # opencode part
        return d["tool"], ["state", "input"], state["input"], None
    if d.get("type") == "response_item" and isinstance(d.get("payload"), dict):  # a Codex rollout line
        return None, ["payload"], d["payload"], None
    if "name" in d or d.get("type") == "tool_use":
        for key in ("input", "arguments", "args"):
            if key in d:
                return d.get("name"), [key], d[key], None
    if "arguments" in d and "plan" not in d and "todos" not in d:  # Codex call without its name
        return None, ["arguments"], d["arguments"], None
    return None


def _unwrap(payload: Any, response: Any) -> _Unwrapped:
    u = _Unwrapped(payload, response)
    for _ in range(_MAX_UNWRAP):
        if isinstance(u.value, str | bytes):
            u.load(u.value)
            continue
        if not isinstance(u.value, dict):
            break
        env = _envelope(u.value)
        if env is None:
            break
        tool, path, inner, resp = env
        u.set_tool(tool)
        if u.response is None and resp is not None:
            u.response = resp
        u.descend(path, inner)
    return u


def _check_name(dialect: str) -> None:
    if dialect != "auto" and dialect not in _MODULES:
        raise LedgerError(f'unknown dialect "{dialect}"; expected auto or one of {", ".join(DIALECTS)}')


def _choose(dialect: str, tool: str | None) -> str:
    """The dialect the tool name pins, reconciled with the one asked for."""
    if tool is None:
        return dialect
    pinned = TOOL_DIALECTS[tool]
    if dialect in ("auto", pinned) or {dialect, pinned} <= _CLAUDE:
        return pinned
    raise LedgerError(f"the payload is a {tool} call ({pinned}), not {dialect}")


def _auto(value: Any, response: Any) -> ParsedWrite:
    if not isinstance(value, dict):
        raise LedgerError(f"unknown payload: expected a JSON object, got {kind(value)}")
    fitting: list[str] = []
    reasons: list[str] = []
    for name in DIALECTS:
        why = _MODULES[name].fits(value)
        if why is None:
            fitting.append(name)
        else:
            reasons.append(f"{name} ({why})")
    if not fitting:
        raise LedgerError("unknown payload: not " + ", ".join(reasons))
    reads: list[ParsedWrite] = [_MODULES[n].read(value, response=response) for n in fitting]
    first = reads[0]
    if all(r.items == first.items and r.whole == first.whole for r in reads[1:]):
        return first
    raise LedgerError(
        f"ambiguous payload: it reads differently as {' and '.join(fitting)}; name the dialect explicitly"
    )


def read(
    payload: str | bytes | dict[str, Any] | list[Any],
    dialect: str = "auto",
    *,
    response: Any = None,
) -> ParsedWrite:
    """Read a payload with every finding, errors included; used by lint.

    Raises LedgerError only when the payload cannot be read at all (not
    JSON, unknown shape, oversized: LintError / LedgerError / LimitError).
    """
    _check_name(dialect)
    try:
        u = _unwrap(payload, response)
        name = _choose(dialect, u.tool)
        if name == "auto":
            pw = _auto(u.value, u.response)
        else:
            pw = _MODULES[name].read(u.value, response=u.response, tool=u.tool)
    except RecursionError:
        raise LintError([Finding("error", "$", "too-deep", "payload is nested too deeply to read")]) from None
    # Text SQLite cannot store (lone surrogates) is refused here, where the agent's paths are known.
    # (The tool's response is mostly not stored; the few ids taken from it meet the store's own check.)
    pw.findings[:0] = [*u.done(), *unicode_findings(u.value)]
    return pw


def parse(
    payload: str | bytes | dict[str, Any] | list[Any],
    dialect: str = "auto",
    *,
    response: Any = None,
) -> ParsedWrite:
    """Read a payload for the ledger; errors raise LintError, warnings stay in `findings`."""
    pw = read(payload, dialect, response=response)
    if any(f.level == "error" for f in pw.findings):
        raise LintError(pw.findings)
    return pw


def detect(payload: str | bytes | dict[str, Any] | list[Any], *, response: Any = None) -> str:
    """The dialect `parse` would use for this payload."""
    return read(payload, response=response).dialect


def render(dialect: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    """Ledger items (id, content, status, priority, active_form) as the agent's tool shows them.

    Claude Tasks render as `{"tasks": [{"id", "subject", "status"}]}`.
    """
    if dialect not in _MODULES:
        raise LedgerError(f'unknown dialect "{dialect}"; expected one of {", ".join(DIALECTS)}')
    result: dict[str, Any] = _MODULES[dialect].render(items)
    return result


def lint_payload(data: str | bytes | Any, dialect: str = "auto") -> list[Finding]:
    """Every finding for a payload, errors and warnings; used by `todoledger lint`.

    Never raises except LimitError: a payload that cannot be read at all
    becomes a single error finding.
    """
    try:
        return read(data, dialect).findings
    except LimitError:
        raise
    except LintError as e:
        return list(e.findings)
    except LedgerError as e:
        return [Finding("error", "$", "unknown-payload", str(e))]
