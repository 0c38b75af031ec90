"""Hooks called by agents. They must never break the agent: whatever goes
wrong is logged and the hook exits 0. Only stdlib, the core and the agent
registry are imported here (the service when the ledger is needed), never
click, rich or MCP: agents run hooks on every tool call."""

from __future__ import annotations

import os
import sys
import time

from todoledger import agents
from todoledger.core.model import MAX_PAYLOAD_BYTES, BusyError, UnavailableError
from todoledger.core.scoped import contextmanager
from todoledger.store.locate import spool_dir, waiting

# Not imported here: `json` (its regular expressions, `enum`, `functools`...: about a third of
# a bare interpreter's start; the event is read by core/jsontext.py, and only the spool
# imports json), `importlib` (the handler is found with `__import__`) and `collections.abc`
# (which loads `collections`). tests/test_lean_imports.py holds the hooks to it.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any

    from todoledger.ledger import Ledger, WriteResult

MAX_LOG_BYTES = 1024 * 1024
PLAN_VAR = "TODOLEDGER_PLAN"  # as todoledger.defaults reads it
# Agents kill hooks after 5 s (Gemini) or 10 s (Claude Code): wait for a busy
# ledger well under that, then keep the event for the next hook run.
HOOK_BUSY_MS = 2_000
PANELS = ".local/state/todoledger/panels"  # where `install claude-code --panel` records each panel
# A hook's whole time for the ledger: its own event first, then older spooled ones in what is left.
HOOK_DEADLINE_S = 2.0
MAX_SPOOLED = 1_000
# What the spool keeps: a write that may succeed later (a busy ledger, a server
# down, restarting or out of reach, a lost connection). Never a refusal by rule.
UNAVAILABLE = (BusyError, UnavailableError)
# The spooled event being replayed: its idempotency key and original time, which
# `mirror` records with the write (ops.source_key: a key seen before is skipped).
_replaying: dict[str, str] = {}
# The hook call under way: its deadline (time.monotonic: past it a PostgreSQL connection
# is closed under the blocked call, store/postgres.py `Watchdog`) and its event's
# idempotency key, made before the first attempt and kept by the spool (a write whose
# commit landed before its connection was lost is then never applied again).
_call: dict[str, Any] = {}


def _state_dir() -> str:
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(state, "todoledger")


def log_path(cwd: str | None = None) -> str:
    from todoledger.store.locate import ledger_file as locate

    where = locate(cwd)
    folder = os.path.dirname(where)
    if "://" not in where and os.path.isdir(folder):  # a ledger URL names no folder to log in
        return os.path.join(folder, "hook.log")
    return os.path.join(_state_dir(), "hook.log")


def log(message: str, cwd: str | None = None) -> None:
    try:
        path = log_path(cwd)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if os.path.exists(path) and os.path.getsize(path) > MAX_LOG_BYTES:
            os.replace(path, path + ".1")  # hooks run forever: keep one old log, not all of them
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {message}\n")
    except Exception:  # a hook that cannot even log still must not fail the agent
        pass


def event_cwd(event: dict[str, Any]) -> str | None:
    cwd = event.get("cwd")
    return cwd if isinstance(cwd, str) and cwd and os.path.isdir(cwd) else None


def ledger(cwd: str | None, *, create: bool = True) -> _Opened:
    """The project's ledger, for a `with` block, with a hook's short patience for a busy
    file, its deadline for a server, and the event's idempotency key (the n-th ledger a
    handler opens for one event keys its writes `key/n`)."""
    from todoledger.ledger import Ledger

    key = _replaying.get("key") or _call.get("key")
    if key is not None:
        opened = _call["opens"] = _call.get("opens", 0) + 1
        key = key if opened == 1 else f"{key}/{opened}"
    return _Opened(  # lean: store/libpq.py says why
        Ledger(
            cwd=cwd, create=create, busy_ms=HOOK_BUSY_MS, lean=True, deadline=_call.get("deadline"), key=key
        )
    )


# Set by the console script (cli/entry.py), which ends the process with `os._exit` once the
# hook's answer is flushed.
_console: list[bool] = [False]
_left_open: list[Ledger] = []


class _Opened:
    """A hook's ledger, closed at the end of the `with` block, except in the console script
    for a SQLite file, as the lean verbs do (cli/lean.py `_Opened`): closing SQLite's last
    connection checkpoints the WAL into the database and deletes it (three fsyncs after a
    write), and the next hook, a few seconds later, creates it and its index again. Each
    commit is synced before it returns (synchronous=FULL), so what the hook wrote is durable
    either way, and the next process reads the WAL as SQLite does after any process that
    ended without closing. One ledger at most is left open (a replay opens one per event);
    a PostgreSQL connection is always closed."""

    __slots__ = ("ledger",)

    def __init__(self, lg: Ledger) -> None:
        self.ledger = lg

    def __enter__(self) -> Ledger:
        return self.ledger

    def __exit__(self, *exc: object) -> None:
        if not _console[0] or "://" in self.ledger.location:
            self.ledger.close()
            return
        while _left_open:
            _left_open.pop().close()
        _left_open.append(self.ledger)


def mirror(
    cwd: str | None,
    payload: Any,
    *,
    writer: str,
    dialect: str,
    response: Any = None,
    after: Callable[[Ledger, WriteResult], None] | None = None,
) -> None:
    """Record an agent's list; what the writer should hear (unmet prerequisites,
    work in progress it dropped) goes to the hook log, since the agent cannot be told.
    `after`: what the agent's hook does with the committed write (Claude Code: its panel)."""
    from todoledger.core.model import LedgerError

    os.environ["PGAPPNAME"] = writer[:63]  # pg_stat_activity names this hook's writer
    with ledger(cwd) as lg:
        try:
            result = lg.write(
                payload,
                writer=writer,
                dialect=dialect,
                response=response,
                source_key=_replaying.get("key"),
                # Clamped to now once the ledger is open: only then does the clock know
                # whether this ledger honours TODOLEDGER_NOW (store/settings.py).
                at=_spooled_at(_replaying["at"]) if "at" in _replaying else None,
            )
        except UNAVAILABLE:  # not a refusal: the event waits in the spool
            raise
        except LedgerError as exc:  # refused by rule (lint, a lease fence...): told to the person too
            _note_refusal(lg, writer, f"{dialect} list: {exc}", cwd)
            raise
        if after is not None:
            after(lg, result)
        elif result.changes:
            panel_sync(lg, cwd, result.plan)
    for w in result.warnings:
        log(f"{writer}: warning: {w.where}: {w.message}", cwd)
    for notice in result.notices:
        log(f"{writer}: {notice}", cwd)


def _note_refusal(lg: Ledger, writer: str, reason: str, cwd: str | None) -> None:
    """A mirrored list the ledger refused, as a refusal event with its writer and reason
    (issue 31), so that report and board show what the agent could not be told; nothing else
    changes. In a plan that does not exist yet nothing is recorded (`record_refusal` creates
    no plan): the hook log keeps the line. Never fails the hook: the refusal is logged anyway."""
    try:
        lg.record_refusal(reason, writer=writer)
    except Exception as exc:
        log(f"{writer}: the refusal was not recorded: {type(exc).__name__}: {exc}", cwd)


def panel_sync(lg: Ledger, cwd: str | None, plan: str | None = None) -> None:
    """Claude Code's task panel, where `install claude-code --panel` set one up for
    this project: the lookup is one file open; the sync is imported only then."""
    if not os.path.isdir(os.path.join(os.path.expanduser("~"), PANELS)):
        return  # no panel on this machine: one stat, nothing imported
    from todoledger.panel import target

    where = target(cwd)
    if where is None or (plan is not None and plan != where.plan):
        return
    from todoledger.panel.sync import sync

    try:
        sync(lg, where)
    except Exception as exc:  # a view: its failure never fails the agent's write
        log(f"panel {where.list_id}: {type(exc).__name__}: {exc}", cwd)


def spool(agent: str, raw: bytes, cwd: str | None, key: str | None = None) -> str | None:
    """Keep an event the ledger could not take (busy, or its server out of
    reach) in order, with its idempotency key (`key`: the one its first attempt
    carried, else a new one) and the time it happened; the next hook run, or
    `todoledger flush`, replays it."""
    import json

    from todoledger.core.timefmt import now

    folder = spool_dir(cwd)
    os.makedirs(folder, exist_ok=True)
    if len(os.listdir(folder)) >= MAX_SPOOLED:
        log(f"hook {agent}: {MAX_SPOOLED} events already wait in {folder}; this one is dropped", cwd)
        return None
    name = f"{time.time_ns():020d}-{os.getpid()}.json"
    tmp = os.path.join(folder, "." + name)
    head = {"agent": agent, "key": key or f"spool:{os.urandom(16).hex()}", "at": now()}
    plan = os.environ.get(PLAN_VAR)
    if plan:  # the plan this hook writes: a replay runs where another may be set, or none
        head["plan"] = plan
    with open(tmp, "wb") as fh:
        fh.write(json.dumps(head).encode() + b"\n" + raw)
        fh.flush()
        os.fsync(fh.fileno())  # durable: the agent has moved on, this is the only copy
    os.replace(tmp, os.path.join(folder, name))
    return name


def replay(
    cwd: str | None,
    *,
    deadline: float | None = None,
    own: str | None = None,
    answers: list[str] | None = None,
) -> tuple[int, int, int]:
    """Hand spooled events to their handlers, oldest first, each with its key
    and original time (a key the ledger recorded already is skipped: never
    applied twice); stop at the first the ledger still cannot take, or once
    `deadline` (time.monotonic) has passed: the rest wait for the next hook or
    `flush`. A refusal (a rule, not the ledger's absence) is logged and the
    event dropped. `own`: the spooled event of the hook replaying them, whose
    handler's answer goes to `answers` (the agent still hears its recovery text).
    Returns (replayed, refused, still waiting)."""
    folder = spool_dir(cwd)
    if not os.path.isdir(folder):
        return 0, 0, 0
    import fcntl
    import json

    done = refused = 0
    lock = os.open(folder, os.O_RDONLY)  # the folder itself: no lock file to leave behind
    try:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # another process replays them now
            return 0, 0, waiting(cwd)[0]
        names = sorted(n for n in os.listdir(folder) if n.endswith(".json") and not n.startswith("."))
        for index, name in enumerate(names):
            if deadline is not None and time.monotonic() >= deadline:
                return done, refused, len(names) - index
            path = os.path.join(folder, name)
            try:
                with open(path, "rb") as fh:
                    head_text, _, raw = fh.read().partition(b"\n")
                head = json.loads(head_text)
                _replaying.clear()
                _replaying.update({k: head[k] for k in ("key",) if isinstance(head.get(k), str)})
                _replaying["at"] = head["at"] if isinstance(head.get("at"), str) else ""
                _call["opens"] = 0
                with _plan_of(head):
                    answer = handler(head["agent"])(json.loads(raw), cwd)
                if name == own and answer and answers is not None:
                    answers.append(answer)
                done += 1
            except UNAVAILABLE:
                return done, refused, len(names) - index
            except Exception as exc:  # a refusal or a bad spooled event must not block the ones after it
                refused += 1
                log(f"hook replay {name}: refused, not applied: {type(exc).__name__}: {exc}", cwd)
            finally:
                _replaying.clear()
            try:  # noqa: SIM105 (contextlib costs every hook call its import: core/scoped.py)
                os.remove(path)
            except OSError:
                pass
    finally:
        os.close(lock)  # and with it the lock
    return done, refused, 0


@contextmanager
def _plan_of(head: dict[str, Any]) -> Iterator[None]:
    """The spooled event's own plan (TODOLEDGER_PLAN when the hook ran, else the
    default) while it is replayed, not the replaying process's."""
    saved = os.environ.get(PLAN_VAR)
    plan = head.get("plan")
    if isinstance(plan, str) and plan:
        os.environ[PLAN_VAR] = plan
    else:
        os.environ.pop(PLAN_VAR, None)
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop(PLAN_VAR, None)
        else:
            os.environ[PLAN_VAR] = saved


def _spooled_at(value: Any) -> str:
    """A spooled event's own time, never later than now: the spool is a file the
    agent can write, and a time to come would make every other writer's lease
    look lapsed (the fence compares the write's time) and put a false time in
    the history. A time that is not one is the replay's."""
    from todoledger.core.timefmt import normalise, now

    current = now()
    try:
        given = normalise(value) if isinstance(value, str) else current
    except (ValueError, OverflowError):
        return current
    return min(given, current)


def handler(agent: str) -> Callable[[dict[str, Any], str | None], str | None]:
    spec = agents.find(agent)
    if spec is None:
        raise ValueError(f"unknown agent {agent!r}")
    __import__(spec.hook)  # importlib.import_module's work for a module named in full, without importlib
    found: Callable[[dict[str, Any], str | None], str | None] = sys.modules[spec.hook].handle
    return found


def run_hook(args: list[str], stdin: Any = None, stdout: Any = None, *, console: bool = False) -> int:
    """Read the agent's hook JSON, hand it to the agent's handler, print its
    answer. Always returns 0. `console`: the process ends with `os._exit` once this
    returns (see `_Opened`)."""
    _console[0] = console
    agent = args[0] if args else ""
    cwd: str | None = None
    try:
        if agents.find(agent) is None:
            log(f"hook: unknown agent {agent!r}; expected one of {', '.join(agents.hook_names())}")
            return 0
        if stdin is None:
            stdin = sys.stdin.buffer if sys.stdin is not None else None
        raw = stdin.read(MAX_PAYLOAD_BYTES + 1) if stdin is not None else b""
        if len(raw) > MAX_PAYLOAD_BYTES:
            log(f"hook {agent}: payload over {MAX_PAYLOAD_BYTES} bytes ignored")
            return 0
        from todoledger.core.jsontext import loads_bytes

        event = loads_bytes(raw or b"{}")  # json.loads, without importing json for UTF-8 text
        if not isinstance(event, dict):
            log(f"hook {agent}: expected a JSON object on stdin")
            return 0
        cwd = event_cwd(event)
        # Its own event is made durable first, then older ones are replayed in the time left
        # (issue 30: a hook that replayed the whole spool first lost its own event when it was
        # killed, and spent 22 s after an outage). Events wait in the spool: this one joins
        # them, in order (a list applied before an older one would be undone by it), and the
        # replay hands it on as the last; else it goes to the ledger, or to the spool if the
        # ledger cannot take it within the hook's patience.
        deadline = time.monotonic() + HOOK_DEADLINE_S
        key = f"hook:{os.urandom(16).hex()}"  # before the first attempt: a retry or replay finds it
        _call.update(deadline=deadline, key=key, opens=0)
        if waiting(cwd)[0]:
            own = spool(agent, raw, cwd, key)
            answers: list[str] = []
            left = replay(cwd, deadline=deadline, own=own, answers=answers)[2]
            if left:
                log(f"hook {agent}: the ledger is unavailable; {left} events wait in the spool", cwd)
                return 0
            answer = answers[0] if answers else None
        else:
            try:
                answer = handler(agent)(event, cwd)
            except UNAVAILABLE as exc:
                spool(agent, raw, cwd, key)
                log(f"hook {agent}: {exc}; kept in the spool for the next run (todoledger flush)", cwd)
                return 0
            replay(cwd, deadline=deadline)  # what another hook spooled meanwhile, in the time left
        if "--gate-stop" in args[1:]:
            answer = _gate(agent, event, cwd) or answer
            refusal = _goal_lock(agent, event, cwd)
            if refusal is not None:  # the harness reads a refusal from exit code 2 and stderr
                log(f"hook {agent}: goal-lock refused {event.get('hook_event_name')}", cwd)
                _write(refusal + "\n", sys.stderr)
                return 2
        if answer:
            _write(answer, stdout)
    except Exception as exc:
        log(f"hook {agent}: {type(exc).__name__}: {exc}", cwd)
    finally:
        _call.clear()
    return 0


def _gate(agent: str, event: dict[str, Any], cwd: str | None) -> str | None:
    """The Stop gate, for hooks installed with --gate-stop (see hooks/stop_gate.py)."""
    from todoledger.hooks import stop_gate

    spec = agents.find(agent)
    name = spec.name if spec is not None else agent
    return stop_gate.answer(name, event, cwd) if stop_gate.applies(name, event) else None


def _goal_lock(agent: str, event: dict[str, Any], cwd: str | None) -> str | None:
    """The goal-lock, for hooks installed with --gate-stop (see hooks/goal_lock.py)."""
    if event.get("hook_event_name") != "TaskCompleted":
        return None
    from todoledger.hooks import goal_lock

    spec = agents.find(agent)
    return goal_lock.gate(spec.name if spec is not None else agent, event, cwd)


def _write(answer: str, stdout: Any) -> None:
    # UTF-8 whatever the locale: a non-UTF-8 console must not swallow the plan.
    out = stdout if stdout is not None else sys.stdout
    if out is None:
        return
    buffer = getattr(out, "buffer", None)
    if buffer is not None:
        out.flush()
        buffer.write(answer.encode("utf-8"))
        buffer.flush()
    else:
        out.write(answer)
        out.flush()
