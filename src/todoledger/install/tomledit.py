"""Merge an MCP server into Codex's `config.toml`.

A new server is appended as its own `[mcp_servers.<name>]` table at the end
of the file: plain text, so the rest stays byte for byte. An existing entry
is updated through tomlkit, which keeps comments and layout of everything
else. Either way the result is re-read with `tomllib` and must equal the old
document plus our keys, or nothing is written.
"""

from __future__ import annotations

import re
import tomllib
from typing import Any

import tomlkit
import tomlkit.exceptions
import tomlkit.items

from todoledger.core.model import LedgerError
from todoledger.install.elements import same
from todoledger.install.entries import kept_summary

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def ensure_server(text: str, label: str, name: str, entry: dict[str, Any], describe: str) -> tuple[str, str]:
    """Return (new text, summary line) with `mcp_servers.<name>` containing `entry`."""
    if text.startswith("\ufeff"):  # editors on Windows add a BOM that TOML parsers refuse: keep it aside
        new, summary = ensure_server(text[1:], label, name, entry, describe)
        return "\ufeff" + new, summary
    doc, expected = _parse(text, label)
    where = f"mcp_servers.{name}"
    servers = doc.get("mcp_servers")
    if servers is not None and not isinstance(servers, dict):
        raise LedgerError(f"{label}: `mcp_servers` is not a table; fix it by hand (nothing was changed)")
    current = servers.get(name) if servers is not None else None
    if current is not None and not isinstance(current, dict):
        raise LedgerError(f"{label}: `{where}` is not a table; fix it by hand (nothing was changed)")

    expected.setdefault("mcp_servers", {}).setdefault(name, {}).update(entry)

    if current is None:
        new = _append_table(text, name, entry)
        if servers is not None and not _equal(new, expected):
            # e.g. `mcp_servers = { ... }` inline: a later header may not extend it.
            servers[name] = _inline(entry)
            new = doc.as_string()
        summary = f"+ {where}: {describe}"
    else:
        # The user's own entry (another path, a pinned plan, disabled) stays as it is.
        plain = {k: _plain(v) for k, v in current.items()}
        return text, kept_summary(where, plain, entry)

    if not _equal(new, expected):
        raise LedgerError(f"{label}: could not merge `{where}` safely; add it by hand (nothing was changed)")
    return new, summary


def _parse(text: str, label: str) -> tuple[tomlkit.TOMLDocument, dict[str, Any]]:
    """The editable document and its plain value; both parsers must accept it."""
    try:
        return tomlkit.parse(text), tomllib.loads(text)
    except tomlkit.exceptions.ParseError as e:
        reason = str(e).rsplit(" at line ", 1)[0].replace("'\\x00'", "end of file")
        where = f"line {e.line}, column {e.col}"
    except tomllib.TOMLDecodeError as e:  # tomlkit is laxer in places
        reason, _, where = str(e).partition(" (at ")
        where = where.rstrip(")")
    raise LedgerError(
        f"{label}: cannot parse {where}: {reason}; fix the file and run again (nothing was changed)"
    )


def _append_table(text: str, name: str, entry: dict[str, Any]) -> str:
    nl = "\r\n" if "\r\n" in text else "\n"
    key = name if _BARE_KEY.fullmatch(name) else tomlkit.item(name).as_string()
    lines = [f"[mcp_servers.{key}]"] + [f"{k} = {tomlkit.item(v).as_string()}" for k, v in entry.items()]
    block = nl.join(lines) + nl
    if not text.strip():
        return block
    if not text.endswith(("\n", "\r")):
        text += nl
    if not text.endswith(nl + nl) and not text.endswith("\n\n"):
        text += nl  # a blank line between tables, as Codex's own docs write them
    return text + block


def _inline(entry: dict[str, Any]) -> tomlkit.items.InlineTable:
    table = tomlkit.inline_table()
    table.update(entry)
    return table


def _plain(value: Any) -> Any:
    return value.unwrap() if hasattr(value, "unwrap") else value


def _equal(text: str, expected: dict[str, Any]) -> bool:
    try:
        return same(tomllib.loads(text), expected)
    except tomllib.TOMLDecodeError:
        return False


def ensure_trust(text: str, label: str, project: str) -> tuple[str, str]:
    """Return (new text, summary line) with `projects."<project>".trust_level = "trusted"`,
    which makes Codex read the project's own `.codex/` config. A trust level the
    user set (say, "untrusted") is kept."""
    if text.startswith("\ufeff"):
        new, summary = ensure_trust(text[1:], label, project)
        return "\ufeff" + new, summary
    doc, expected = _parse(text, label)
    where = f"projects.{tomlkit.item(project).as_string()}"
    projects = doc.get("projects")
    if projects is not None and not isinstance(projects, dict):
        raise LedgerError(f"{label}: `projects` is not a table; fix it by hand (nothing was changed)")
    current = projects.get(project) if projects is not None else None
    if isinstance(current, dict) and "trust_level" in current:
        level = _plain(current["trust_level"])
        state = "already trusted" if level == "trusted" else f"kept as {level!r}"
        return text, f"= {where}.trust_level: {state}"
    if current is not None and not isinstance(current, dict):
        raise LedgerError(f"{label}: `{where}` is not a table; fix it by hand (nothing was changed)")
    expected.setdefault("projects", {}).setdefault(project, {})["trust_level"] = "trusted"
    nl = "\r\n" if "\r\n" in text else "\n"
    if current is None:
        block = f'[{where}]{nl}trust_level = "trusted"{nl}'
        new = text
        if new.strip():
            if not new.endswith(("\n", "\r")):
                new += nl
            if not new.endswith(nl + nl) and not new.endswith("\n\n"):
                new += nl
            new += block
        else:
            new = block
    else:
        current["trust_level"] = "trusted"
        new = doc.as_string()
    if not _equal(new, expected):
        raise LedgerError(f"{label}: could not add `{where}` safely; add it by hand (nothing was changed)")
    return new, f"+ {where}.trust_level: trusted"


def ensure_hook_trust(text: str, label: str, hashes: dict[str, str]) -> tuple[str, str]:
    """Return (new text, summary line) with `hooks.state."<key>".trusted_hash` set for
    each hook: what Codex's `/hooks` review stores when the user approves a hook."""
    if text.startswith("\ufeff"):
        new, summary = ensure_hook_trust(text[1:], label, hashes)
        return "\ufeff" + new, summary
    doc, expected = _parse(text, label)
    hooks = doc.get("hooks")
    state = hooks.get("state") if isinstance(hooks, dict) else None
    if (hooks is not None and not isinstance(hooks, dict)) or (
        state is not None and not isinstance(state, dict)
    ):
        raise LedgerError(
            f"{label}: `hooks.state` is not a table; approve the hooks in Codex's /hooks instead"
        )
    wanted = {k: h for k, h in hashes.items() if _plain((state or {}).get(k, {})).get("trusted_hash") != h}
    if not wanted:
        return text, "= hooks.state: todoledger's hooks already approved"
    for key, digest in wanted.items():
        expected.setdefault("hooks", {}).setdefault("state", {}).setdefault(key, {})["trusted_hash"] = digest
    nl = "\r\n" if "\r\n" in text else "\n"
    new = text
    if new.strip() and not new.endswith(("\n", "\r")):
        new += nl
    for key, digest in wanted.items():
        new += f"{nl if new.strip() else ''}[hooks.state.{tomlkit.item(key).as_string()}]{nl}"
        new += f"trusted_hash = {tomlkit.item(digest).as_string()}{nl}"
    if not _equal(new, expected):
        state_table = doc.setdefault("hooks", tomlkit.table()).setdefault(
            "state", tomlkit.table(is_super_table=True)
        )
        for key, digest in wanted.items():
            state_table[key] = {"trusted_hash": digest}
        new = doc.as_string()
    if not _equal(new, expected):
        raise LedgerError(f"{label}: could not add `hooks.state` safely; approve the hooks in Codex's /hooks")
    return new, f"+ hooks.state: {len(wanted)} todoledger hook(s) approved (the hashes Codex computes)"
