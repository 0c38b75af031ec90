"""Agent-written text never reaches a terminal (or an agent's context) raw.

Items, evidence, reasons and writer names carrying screen clears, OSC 8
hyperlinks, bells, backspaces, carriage returns, bidi overrides and
zero-width characters go through the real `todoledger` executable: piped
(plain text), on a pseudo-terminal (rich), and through the SessionStart hooks.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import struct
import subprocess
import termios
import tty
from pathlib import Path

import pytest

from tests.conftest import subprocess_env, todoledger_bin
from todoledger.core.markdown import html_text, md_text
from todoledger.core.sanitize import for_terminal

CLEAR = "\x1b[2J"
LINK = "\x1b]8;;http://evil\x1b\\click here\x1b]8;;\x1b\\"
HOSTILE = f"Deploy {CLEAR}{LINK} ok\x07\bX\rY \u202eevil\u202c z\u200dw\u2066i\u2069 \u200bq\x9b31m"
# What must never come out: escape and C1 controls, bell, backspace, CR,
# bidi controls and zero-width characters.
FORBIDDEN = ("\x1b[2J", "\x1b]", "\x07", "\b", "\r", "\u202e", "\u202c", "\u200d", "\u2066", "\u200b", "\x9b")
SGR = re.compile(r"\x1b\[[0-9;]*m")  # rich's own colours, the only escapes allowed


def _assert_clean(out: str, *, terminal: bool = False) -> None:
    found = [repr(f) for f in FORBIDDEN if f in out]
    assert not found, f"raw {', '.join(found)} in output:\n{out!r}"
    rest = SGR.sub("", out) if terminal else out
    assert "\x1b" not in rest, rest


def _plan_with_hostile_text(db: Path) -> dict[str, str]:
    env = subprocess_env(db)

    def run(*args: str) -> str:
        proc = subprocess.run(
            [todoledger_bin(), *args, "--json"], capture_output=True, text=True, env=env, timeout=60
        )
        assert proc.returncode == 0, proc.stderr
        return str(json.loads(proc.stdout)["id"])

    writer = f"agent{CLEAR}\u202eevil"
    done = run("add", f"Done {HOSTILE}", "--writer", writer)
    dropped = run("add", f"Dropped {HOSTILE}", "--writer", writer)
    run("add", f"Next {HOSTILE}", "--priority", "high", "--writer", writer)
    run("done", done, "--evidence", f"evidence {HOSTILE}", "--writer", writer)
    run("cancel", dropped, "--reason", f"reason {HOSTILE}", "--writer", writer)
    return {"done": done, "dropped": dropped, "writer": writer}


def _piped(db: Path, *args: str) -> str:
    proc = subprocess.run(
        [todoledger_bin(), *args], capture_output=True, text=True, env=subprocess_env(db), timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _on_terminal(db: Path, *args: str) -> str:
    """The command's output on a real pseudo-terminal (so rich renders it)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
    tty.setraw(slave)  # no newline translation: any CR in the output is the program's own
    env = subprocess_env(db, TERM="xterm-256color", COLUMNS="200")
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen(
        [todoledger_bin(), *args],
        stdin=subprocess.DEVNULL,
        stdout=slave,
        stderr=subprocess.PIPE,
        env=env,
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the program closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    assert proc.wait(timeout=60) == 0, proc.stderr.read() if proc.stderr else ""
    return b"".join(chunks).decode("utf-8")


def test_prime_and_plain_output_carry_no_control_or_hidden_character(ledger_env: Path) -> None:
    _plan_with_hostile_text(ledger_env)
    prime = _piped(ledger_env, "prime")
    assert "evidence Deploy" in prime and "Next Deploy" in prime  # the text is there, defused
    _assert_clean(prime)
    for args in (("show",), ("history",), ("next",), ("plans",)):
        out = _piped(ledger_env, *args)
        assert out.strip()
        _assert_clean(out)
    assert "agent\ufffd[2Jevil" in _piped(ledger_env, "history")


@pytest.mark.parametrize(
    ("command", "shown"),
    [
        (("show", "--all"), "evidence: evidence Deploy"),
        (("show", "--all"), "reason: reason Deploy"),
        (("history",), "agent\ufffd[2Jevil"),
        (("next", "--claim", "--writer", "WRITER"), "claimed by agent"),
    ],
)
def test_rich_output_on_a_terminal_carries_no_agent_escape(
    ledger_env: Path, command: tuple[str, ...], shown: str
) -> None:
    ids = _plan_with_hostile_text(ledger_env)
    out = _on_terminal(ledger_env, *(ids["writer"] if arg == "WRITER" else arg for arg in command))
    assert shown in SGR.sub("", out)
    _assert_clean(out, terminal=True)


@pytest.mark.parametrize("agent", ["claude-code", "gemini"])
def test_session_start_hooks_hand_agents_sanitised_text(ledger_env: Path, agent: str) -> None:
    _plan_with_hostile_text(ledger_env)
    event = {"session_id": "s1", "hook_event_name": "SessionStart", "source": "startup", "cwd": os.getcwd()}
    proc = subprocess.run(
        [todoledger_bin(), "hook", agent],
        input=json.dumps(event),
        capture_output=True,
        text=True,
        env=subprocess_env(ledger_env),
        timeout=60,
    )
    assert proc.returncode == 0
    text = proc.stdout
    if agent == "gemini":  # JSON escapes the controls; the agent reads them decoded
        text = json.loads(text)["hookSpecificOutput"]["additionalContext"]
    assert "Next Deploy" in text
    _assert_clean(text)


def test_for_terminal_leaves_only_printable_text() -> None:
    every = "".join(chr(c) for c in range(0x110000))
    out = for_terminal(every)
    assert all(ch.isprintable() for ch in out)
    assert "\n" not in out and for_terminal("a\nb", newlines=True) == "a\nb"
    assert for_terminal("a\r\nb\rc", newlines=True) == "a\nb\ufffdc"
    assert for_terminal("a\r\nb") == "a\ufffd b"
    assert for_terminal("plain text, déjà vu 日本語 🙂") == "plain text, déjà vu 日本語 🙂"
    assert for_terminal(f"a{CLEAR}b\rc\u202ed\u200be") == "a\ufffd[2Jb\ufffdcde"
    assert for_terminal("no\u00a0break\ttab") == "no break tab"
    assert for_terminal(None) == ""


def test_markdown_and_html_build_on_it() -> None:
    assert md_text(f"x{CLEAR}\u202ey\nz") == "x\ufffd\\[2Jy z"
    assert (
        html_text(f"<b>{LINK}</b>\u200b")
        == "&lt;b&gt;\ufffd]8;;http://evil\ufffd\\click here\ufffd]8;;\ufffd\\&lt;/b&gt;"
    )
