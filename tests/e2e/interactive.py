"""The real Claude Code, interactive, under a pseudo-terminal, with the fake model.

`claude -p` does not declare the MCP Tasks extension; only the interactive
terminal does (tests/e2e/TASKS.md). So these helpers run `claude` as a person
does: they answer the first-run dialogs as a person would (trust the folder, use
the API key from the environment), type the prompt, and act through Claude
Code's own screens (`/mcp` to reconnect a server). What is set up before the
start is only what a person who has used Claude Code before already has: the
finished first-run onboarding (it needs the internet, `hasCompletedOnboarding`).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.e2e.agents import CLAUDE, CLAUDE_MODEL, Scratch
from tests.e2e.fakemodel import FakeModel
from tests.e2e.terminal import DOWN, ENTER, ESC, Terminal

READY = "shift+tab to cycle"  # the status line under an idle prompt box
TASK_RUNNING = re.compile(r"\d+ MCP tasks? still running")


def finish_onboarding(scratch: Scratch, **user_config: Any) -> None:
    """What a returning user's ~/.claude.json holds: onboarding done (and, for a
    test's own server, a user-scope MCP server; todoledger's comes from install)."""
    path = scratch.home / ".claude.json"
    config = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    config["hasCompletedOnboarding"] = True
    config.update(user_config)
    path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")


def terminal_env(scratch: Scratch) -> dict[str, str]:
    env = scratch.env() | {
        "TERM": "xterm-256color",
        "ANTHROPIC_BASE_URL": scratch.url,
        "ANTHROPIC_API_KEY": "sk-ant-e2e-dummy",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
    }
    for name in ("NO_COLOR", "CI"):  # a person's terminal, not a CI job's
        env.pop(name, None)
    return env


def start(scratch: Scratch, debug_log: Path, *args: str) -> Terminal:
    """`claude` in the project, past the first-run dialogs, at an idle prompt."""
    argv = [str(CLAUDE.path), "--model", CLAUDE_MODEL, "--debug-file", str(debug_log), *args]
    term = Terminal(argv, cwd=scratch.project, env=terminal_env(scratch))
    try:
        trust(term)
        answer_dialogs(term, {"use this API key": "Yes"})
    except BaseException:
        term.close()
        raise
    return term


def trust(term: Terminal) -> None:
    """The trust dialog, answered as a person: "Yes, I trust this folder"."""
    term.choose("Yes, I trust this folder", timeout=60)
    term.wait_for(lambda s: "Yes, I trust this folder" not in s, timeout=60)


def answer_dialogs(term: Terminal, answers: dict[str, str], timeout: float = 90) -> None:
    """Until the idle prompt shows: each dialog on screen that holds a key of
    `answers` gets that option chosen; a dialog not listed fails the test (a step
    a person would have to decide, which the test does not take for them)."""
    deadline = time.monotonic() + timeout
    answered: set[str] = set()
    while time.monotonic() < deadline:
        screen = term.text()
        if READY in screen and "Enter to confirm" not in screen:
            return
        if "Enter to confirm" in screen or "Enter to select" in screen:
            asked = [key for key in answers if key in screen and key not in answered]
            if not asked:
                # A dialog just answered can stay drawn a while on a busy machine: only
                # one that stays, unchanged, is a question the test does not answer.
                time.sleep(10)
                if term.text() == screen:
                    raise AssertionError(f"a dialog the test does not answer:\n{screen}")
                continue
            term.choose(answers[asked[0]])
            answered.add(asked[0])
            term.wait_for(lambda s, key=asked[0]: key not in s, timeout=30)  # type: ignore[misc]
            continue
        time.sleep(0.2)
    raise AssertionError(f"Claude Code did not reach its prompt; the screen:\n{term.text()}")


def send(term: Terminal, prompt: str) -> None:
    time.sleep(0.3)  # the prompt box reads keys once drawn
    term.type_slowly(prompt)
    term.wait_for(prompt)
    term.type(ENTER)


def reconnect(term: Terminal, server: str) -> None:
    """`/mcp`, the server, Reconnect: what a person does for a server marked failed."""
    send(term, "/mcp")
    term.wait_for("MCP servers")
    term.choose(server)
    term.choose("Reconnect")
    term.wait_for(f"Reconnected to {server}", timeout=60)


def stop_task(term: Terminal) -> str:
    """↓ to the task list, Enter on the task, `x`: what a person does to stop a
    background task. The task's panel as it was shown before the stop."""
    term.type(DOWN)
    term.wait_for("enter to view tasks")
    term.type(ENTER)
    panel = term.wait_for("x to stop")
    term.type("x")
    term.wait_for("No tasks currently running")
    term.type(ESC)
    return panel


def close_menu(term: Terminal) -> None:
    term.type(ESC)


def wait_until(test: Callable[[], Any], what: str, timeout: float = 60, term: Terminal | None = None) -> Any:
    """The first true value of `test()`, polled; fails with `what` after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        value = test()
        if value:
            return value
        if time.monotonic() > deadline:
            screen = f"\nthe screen:\n{term.text()}" if term is not None else ""
            raise AssertionError(f"timed out after {timeout}s waiting for {what}{screen}")
        time.sleep(0.2)


def model_saw(fake: FakeModel, text: str) -> list[int]:
    """Indexes of the agent's model requests whose conversation holds `text`."""
    return [i for i, r in enumerate(fake.requests) if r.api == "anthropic" and text in r.text()]


def debug_lines(debug_log: Path, pattern: str) -> list[str]:
    if not debug_log.exists():
        return []
    return [
        line
        for line in debug_log.read_text(encoding="utf-8", errors="replace").splitlines()
        if pattern in line
    ]
