"""The pre-tool shell screen: an agent's shell command that runs a person-only
todoledger verb is denied before it runs, with the reason.

Defence in depth: the guard is the identity of the route (`todoledger.identity`)
and the ledger's person-only rules; this screen also stops what a process could
hide from them (`env -u CLAUDECODE todoledger approve ...`). It runs before every
shell command an agent makes, so it is the leanest path of all: a command that
does not mention todoledger is let through after one byte search of stdin, with
no import beyond the interpreter's own (bench/bench_agents.py measures it).

Wired by `todoledger install` as `todoledger hook <agent> --screen`:
Claude Code and Codex `PreToolUse` on `Bash` (deny: exit 2, the reason on
stderr, which both show the model), Gemini CLI `BeforeTool` on
`run_shell_command` (the same exit 2 convention), opencode's plugin
`tool.execute.before` on `bash` (the plugin throws the reason).

What it catches: `todoledger`, `python -m todoledger`, any path ending in
todoledger, behind `env -u ...`, `sh -c "..."`, `$(...)`, backquotes, quotes or
backslashes inside the name; followed by a person-only action of the one table
(`core/person_actions.py`: approve, trust, gate remove, accept-metric, sweep
trust, token add/remove, undo --any, done --force). The words after the name are
read as the command line reads them: `--plan=main`, an option's value
(`--plan main`), options before the verb, `--` ending the options. A command
that builds the name at run time (`$T approve`) is not seen here: the route and
the ledger still refuse it.
"""

from __future__ import annotations

import sys

# Words that separate one command from the next, or open a nested one.
_BREAKS = ";&|()`\n{}<>"
_DROP = "\"'\\"
REASON = (
    "todoledger {verb} is a person's to run, not an agent's: a person runs it from a plain terminal,"
    " the board, or with TODOLEDGER_TOKEN set to a person's token (todoledger's pre-tool screen)"
)


def person_only_verb(command: str) -> str | None:
    """The person-only todoledger verb a shell command would run, or None."""
    if "todoledger" not in command.replace("\\", "").replace('"', "").replace("'", ""):
        return None
    text = command
    for ch in _DROP:
        text = text.replace(ch, "")
    text = text.replace("$(", " ; ").replace("&&", " ; ").replace("||", " ; ")
    for ch in _BREAKS:
        text = text.replace(ch, " ; ")
    words = text.split()
    for n, word in enumerate(words):
        base = word.rsplit("/", 1)[-1]
        if not base.startswith("todoledger") or base.startswith("todoledger-"):
            continue  # `todoledger-e2e`, a folder name, is not the command
        if base not in ("todoledger", "todoledger.exe") and not base.startswith("todoledger.cli"):
            continue
        rest: list[str] = []
        for w in words[n + 1 :]:
            if w == ";":
                break
            rest.append(w)
        found = _verb_of(rest)
        if found:
            return found
    return None


def _parse(args: list[str]) -> tuple[list[str], set[str]]:
    """The positional words and the option names of a todoledger command line, as
    click reads them: `--name=value` is one option, a value option takes the next
    word unless it is another option, `--` ends the options."""
    from todoledger.core.person_actions import VALUE_OPTIONS

    positional: list[str] = []
    names: set[str] = set()
    n = 0
    while n < len(args):
        word = args[n]
        n += 1
        if word == "--":
            positional.extend(args[n:])
            break
        if word.startswith("--"):
            name, eq, _ = word.partition("=")
            names.add(name)
            if not eq and name in VALUE_OPTIONS and n < len(args) and not args[n].startswith("-"):
                n += 1  # its value
        elif word.startswith("-") and len(word) > 1:
            names.add(word)
        else:
            positional.append(word)
    return positional, names


def _verb_of(args: list[str]) -> str | None:
    from todoledger.core.person_actions import PERSON_ACTIONS

    positional, names = _parse(args)
    for action in PERSON_ACTIONS:
        if tuple(positional[: len(action.words)]) != action.words:
            continue
        if action.words == ("approve",):
            if "--list" in names:
                continue  # only lists what waits for a person
            if action.flag and action.flag in names:
                return action.verb  # approve --plan [NAME]
            if not action.flag and len(positional) > 1:
                return action.verb  # approve ID
            continue
        if action.flag and action.flag not in names:
            continue
        return action.verb
    return None


def command_of(event: object) -> str:
    """The shell command in a pre-tool event: `tool_input.command` (Claude Code,
    Codex, Gemini's `run_shell_command`), or opencode's `args.command`."""
    if not isinstance(event, dict):
        return ""
    for key in ("tool_input", "args", "input"):
        part = event.get(key)
        if isinstance(part, dict):
            cmd = part.get("command")
            if isinstance(cmd, list):
                return " ".join(str(c) for c in cmd)
            if isinstance(cmd, str):
                return cmd
    return ""


def run(agent: str) -> int:
    """Read one pre-tool event on stdin; exit 2 with the reason to deny, else 0.
    Never breaks the agent: what it cannot read it lets through."""
    try:
        data = sys.stdin.buffer.read()
    except (OSError, ValueError):
        return 0
    if b"todoledger" not in data.replace(b"\\", b"").replace(b'"', b"").replace(b"'", b""):
        return 0  # the common case: nothing of ours in the command
    import json

    try:
        event = json.loads(data)
    except ValueError:
        return 0
    verb = person_only_verb(command_of(event))
    if verb is None:
        return 0
    sys.stderr.write(REASON.format(verb=verb) + "\n")
    _log(agent, verb)
    return 2


def _log(agent: str, verb: str) -> None:
    """A denial is logged where the hooks log (hook.log beside the ledger, else
    the state folder); never spooled: a refusal is not retried."""
    try:
        import os
        import time

        from todoledger.store.locate import ledger_file

        folder = os.path.dirname(ledger_file(None))
        if "://" in folder or not os.path.isdir(folder):
            state = os.environ.get("XDG_STATE_HOME") or os.path.join(
                os.path.expanduser("~"), ".local", "state"
            )
            folder = os.path.join(state, "todoledger")
            os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "hook.log"), "a", encoding="utf-8") as fh:
            stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
            fh.write(f"{stamp} {agent} screen: denied a shell command running todoledger {verb}\n")
    except Exception:  # the screen never breaks the agent
        pass
