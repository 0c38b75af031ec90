"""Who is at the other end of a command line: identity from where the call comes.

A person's identity comes only from the route, never from what a process says:

- a token in `TODOLEDGER_TOKEN` that a person registered in the ledger
  (`todoledger token add`, `ledger.tokens`): writer `cli:<name>` for a person's,
  `<identity>@cli` (`agent:ci@cli`) for an agent's. No tokens file counts here:
  the agent's environment names that file, so the agent could write its own;
- a process started by an agent's shell tool (its marker below is set): writer
  `agent-shell:<kind>[:<session>]`, whatever it asks to be called;
- a terminal (stdin is a tty) with no agent marker, in this process or in any
  process above it (`marked_ancestor`): writer `cli:<OS user>`;
- anything else (a script, a pipe, cron, an agent that unset its marker): writer
  `script:<OS user>`, not a person. A person-only verb there asks for a token.

`--writer` and `TODOLEDGER_WRITER` name a writer, never a person: a self-named
person writer (`cli:...`, `web:...`, `mcp-user:...`, `cli`) is refused with one
line; in an agent's shell they may only name that agent's own writers.

The markers, as each agent sets them in its shell tool's environment (checked
against the agents' current builds, December 2026):

- Claude Code: `CLAUDECODE=1` in its Bash tool (`{..., SHELL, GIT_EDITOR:"true",
  CLAUDECODE:"1"}` in the shell spawn of @anthropic-ai/claude-code; since 0.2.47,
  anthropics/claude-code#531); `CLAUDE_CODE_SESSION_ID` names the session where set.
- Gemini CLI: `GEMINI_CLI=1` (`GEMINI_CLI_IDENTIFICATION_ENV_VAR` in
  @google/gemini-cli's shell execution service); `GEMINI_SESSION_ID` where set.
- Codex: `CODEX_THREAD_ID` (codex-rs/protocol/src/shell_environment.rs,
  `populate_env`: inserted into every shell tool call's environment when the
  thread id is known), and `CODEX_SANDBOX` / `CODEX_SANDBOX_NETWORK_DISABLED`
  (codex-rs core `spawn.rs`: set when a sandbox is active / the network is off).
- opencode: `OPENCODE=1` (and `OPENCODE_PID`), set on its own process at start
  (`process.env.OPENCODE="1"` in the opencode binary's entry), so every bash tool
  child inherits it.
- `TODOLEDGER_AGENT=<kind>`: what `todoledger install` adds through the agent's
  own config where a marker may be missing or unset (Claude Code's settings
  `env`, Codex's `shell_environment_policy.set`).

Env lookups only: this runs on the lean verbs' path (`show --json`).
"""

from __future__ import annotations

import os

from todoledger.core.model import LedgerError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from todoledger.tokens import Holder

# (kind, the variables that mark its shell, the variable naming its session)
MARKERS: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("claude-code", ("CLAUDECODE",), "CLAUDE_CODE_SESSION_ID"),
    ("codex", ("CODEX_THREAD_ID", "CODEX_SANDBOX", "CODEX_SANDBOX_NETWORK_DISABLED"), "CODEX_THREAD_ID"),
    ("gemini", ("GEMINI_CLI",), "GEMINI_SESSION_ID"),
    ("opencode", ("OPENCODE",), ""),
)
MARKER_VARS = ("TODOLEDGER_AGENT", *(v for _, names, _ in MARKERS for v in names))
_SESSIONS = tuple(session for _, _, session in MARKERS if session)
KINDS = tuple(kind for kind, _, _ in MARKERS)
PERSON_ROUTES = "from a plain terminal, the board, or with TODOLEDGER_TOKEN set to a person's token"


def agent_marker(env: dict[str, str] | None = None) -> tuple[str, str] | None:
    """(kind, session) of the agent whose shell started this process, or None."""
    get = os.environ.get if env is None else env.get
    named = get("TODOLEDGER_AGENT")
    for kind, names, session in MARKERS:
        if named == kind or any(get(name) for name in names):
            return kind, (get(session) or "")[:64] if session else ""
    if named:  # an install marker of an agent we do not know by name
        return named[:32], ""
    return None


# How far up the process tree `marked_ancestor` looks (a shell tool's command is
# a few levels below the agent: its shell, a wrapper, an interpreter). A chain
# deeper than this is no person's terminal: it reads as an agent above.
MAX_ANCESTORS = 64

# What `marked_ancestor` answers where it cannot see what is above: an ancestor
# whose environment it may not read (a wrapper that made itself non-dumpable, as
# the same OS user can), a process that left mid-walk, or a chain past the cap.
UNSEEN = ("unseen", "")

# The agents' own programs, as their processes show in /proc/<pid>/cmdline: a
# native binary by its name (codex-x86_64-unknown-linux-musl, opencode-linux-x64),
# or the script a runtime runs (node .../@anthropic-ai/claude-code/cli.js). An
# agent's process carries no marker of its own, so a shell that exec'd its last
# command (`bash -c "...; script -qc ..."`) leaves nothing marked above: the agent is
# still there.
AGENT_PROGRAMS = (
    ("claude", "claude-code"),
    ("codex", "codex"),
    ("gemini", "gemini"),
    ("opencode", "opencode"),
)
AGENT_PACKAGES = (
    ("@anthropic-ai/claude-code", "claude-code"),
    ("@openai/codex", "codex"),
    ("@google/gemini-cli", "gemini"),
    ("opencode-ai", "opencode"),
)
_RUNTIMES = frozenset({"node", "nodejs", "bun", "deno"})


def agent_program(cmdline: bytes) -> str | None:
    """The agent kind whose own program this command line runs, or None."""
    args = [a.decode("utf-8", "replace") for a in cmdline.split(b"\0")[:2]]
    if not args or not args[0]:
        return None
    candidates = [args[0]]
    if os.path.basename(args[0]) in _RUNTIMES and len(args) > 1:
        candidates.append(args[1])
    for arg in candidates:
        for package, kind in AGENT_PACKAGES:
            if f"/{package}/" in arg or f"/{package}-" in arg:
                return kind
        base = os.path.basename(arg)
        for suffix in (".js", ".mjs", ".cjs", ".exe"):
            base = base.removesuffix(suffix)
        for name, kind in AGENT_PROGRAMS:
            if base == name or base.startswith(name + "-"):
                return kind
    return None


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError:
        return None


def _real_uid(pid: int) -> int | None:
    status = _read(f"/proc/{pid}/status")
    for line in (status or b"").splitlines():
        if line.startswith(b"Uid:"):
            try:
                return int(line.split()[1])
            except (IndexError, ValueError):
                return None
    return None


def marked_ancestor(*, harness_parent: bool = False) -> tuple[str, str] | None:
    """(kind, session) of the agent whose shell tool this process descends from,
    seen in a process above it: its parent or any process further up whose
    initial environment (/proc/<pid>/environ, fixed when that process started)
    carries an agent's marker, or that runs an agent's own program
    (`agent_program`). A process cannot change what its parent was started
    with, so `env -u CLAUDECODE`, a pseudo-terminal (`script -c`) or a client
    script of its own still shows the agent's shell above it.

    It fails closed: an ancestor of this user whose environment cannot be read,
    a process gone mid-walk, or a chain deeper than MAX_ANCESTORS answers
    UNSEEN (an agent above), since a wrapper run as the same user can make
    itself unreadable (prctl PR_SET_DUMPABLE 0). Not so a process of another
    user (root's sshd, `su`) or one that root started as this user (sshd's
    session, login): an agent running as this user cannot make either, and the
    walk goes on above it through /proc/<pid>/stat.

    `harness_parent`: this process is an MCP server its client started (an
    agent's harness starts its servers itself), so the agent's own program above
    it is not held against it: only markers count, as before programs were
    recognised (the real Gemini CLI starts its servers with a process of another
    program between, so no rule of "the programs right above" holds). A server
    started from the agent's shell still has the marked shell further up; one
    started by an `exec` that drops that shell is the same-user limit that
    docs/security.md states for an unsigned ledger (a signed one never takes a
    client's answer as a person's).

    An agent's own process starts without its marker (it sets the marker for the
    processes it starts: its shells, and for most its MCP servers too), so the
    harness launching an MCP server is not mistaken for its shell. None where
    /proc cannot be read (not Linux): then only this process's own markers count.
    """
    pid = os.getppid()
    me = os.getuid()
    for _ in range(MAX_ANCESTORS):
        if pid <= 1:
            return None
        stat = _read(f"/proc/{pid}/stat")
        if stat is None:
            return UNSEEN  # gone mid-walk: what was there is unknown
        try:  # "pid (comm) state ppid ...": comm may hold spaces and parentheses
            parent = int(stat.rsplit(b")", 1)[1].split()[1])
        except (IndexError, ValueError):
            return UNSEEN
        raw = _read(f"/proc/{pid}/environ")
        if raw is None and (me == 0 or (_real_uid(pid) == me and _real_uid(parent) != 0)):
            # Ours, and hidden from us: a wrapper the same user made non-dumpable.
            return UNSEEN
        if raw is None:
            pass  # another user's (root's sshd, su, login) or one root started as us: go on above it
        else:
            env: dict[str, str] = {}
            for entry in raw.split(b"\0"):
                name, eq, value = entry.partition(b"=")
                if eq and name.decode("utf-8", "replace") in MARKER_VARS + _SESSIONS:
                    env[name.decode("utf-8", "replace")] = value.decode("utf-8", "replace")
            found = agent_marker(env)
            if found is not None:
                return found
        if not harness_parent:
            kind = agent_program(_read(f"/proc/{pid}/cmdline") or b"")
            if kind is not None:
                return kind, ""
        pid = parent
    return UNSEEN


def shell_above() -> tuple[str, str] | None:
    """The agent whose shell tool started this process's parent (or one above it):
    `marked_ancestor` where /proc can be read; elsewhere this process's own marker,
    which an agent also sets on the MCP servers it starts (so there every one of
    them reads as started from its shell: a prompt answered there is no person's)."""
    if os.path.isdir("/proc/self"):
        return marked_ancestor(harness_parent=True)
    return agent_marker()


def os_user() -> str | None:
    """What getpass.getuser() does, without importing getpass (termios, warnings:
    start-up every call would pay, see bench/bench_core.py)."""
    for name in ("LOGNAME", "USER", "LNAME", "USERNAME"):
        user = os.environ.get(name)
        if user:
            return user
    try:
        import pwd

        return pwd.getpwuid(os.getuid()).pw_name
    except ImportError:  # no password database here (Windows): getpass knows what else to ask
        pass
    except KeyError:
        return None
    import getpass

    try:
        return getpass.getuser()
    except Exception:  # getpass raises a bare KeyError/OSError without a passwd entry
        return None


def at_terminal() -> bool:
    """A person types here: stdin is a terminal."""
    try:
        return os.isatty(0)
    except OSError:
        return False


def agent_writer(kind: str, session: str) -> str:
    return f"agent-shell:{kind}:{session}" if session else f"agent-shell:{kind}"


def token_writer(token: str, holder_of: Callable[[str], Holder | None] | None) -> str:
    """The writer of a token's holder: `cli:<name>` for a person, `<identity>@cli`
    for an agent (`agent:ci@cli`: a token showed who it is). Only a token
    registered in the ledger counts (`holder_of`, `ledger.tokens`): a tokens
    file that TODOLEDGER_TOKENS or XDG_CONFIG_HOME names is whatever its writer
    put there, and the agent under review can write one."""
    holder = holder_of(token) if holder_of is not None else None
    if holder is None:
        raise LedgerError(
            "TODOLEDGER_TOKEN is not a token registered in this ledger (a person registers one with"
            " `todoledger token add NAME` from a plain terminal; a tokens file is for `serve --tokens`):"
            " nothing was done"
        )
    return f"cli:{holder.name}" if holder.person else f"{holder.name}@cli"


def named(writer: str, where: str = "--writer") -> str:
    """A writer a process names (`--writer`, TODOLEDGER_WRITER): never a person,
    and in an agent's shell only that agent's own."""
    from todoledger.core.approval import is_person, principal

    if is_person(writer):
        raise LedgerError(
            f"{where} {writer}: names a person; a person's identity comes only from the route "
            f"({PERSON_ROUTES}): nothing was done"
        )
    if "@" in writer:  # `<identity>@…` is how a token's holder leads its writes: only a token says so
        raise LedgerError(
            f"{where} {writer}: a name with @ is a token holder's; it comes only from a token"
            " (TODOLEDGER_TOKEN): nothing was done"
        )
    marker = agent_marker()
    if marker is not None and principal(writer) != f"agent:{marker[0]}":
        raise LedgerError(
            f"{where} {writer}: this process runs in {marker[0]}'s shell; it writes as "
            f"{agent_writer(*marker)}, not as another writer: nothing was done"
        )
    return writer


def route_writer(holder_of: Callable[[str], Holder | None] | None = None) -> str:
    """The writer of this process when it names none (see the module's doc);
    `holder_of` looks a TODOLEDGER_TOKEN up in the ledger's registry."""
    token = os.environ.get("TODOLEDGER_TOKEN")
    if token:
        return token_writer(token, holder_of)
    return local_writer()


def local_writer() -> str:
    """The writer of this process from where it runs, without a token: a name it
    was given, an agent's shell, a terminal, or a script."""
    env = os.environ.get("TODOLEDGER_WRITER")
    if env:
        return named(env, "TODOLEDGER_WRITER")
    marker = agent_marker()
    if marker is not None:
        return agent_writer(*marker)
    user = os_user()
    if at_terminal():
        # A terminal under an agent's shell (a pty it made, its marker unset) is that agent's.
        above = marked_ancestor()
        if above is not None:
            return agent_writer(*above)
        return f"cli:{user}" if user else "cli"
    return f"script:{user}" if user else "script"


def cli_writer(given: str | None) -> str:
    """The writer of a command line that may name one (`--writer`)."""
    if given:
        return named(given)
    return route_writer()
