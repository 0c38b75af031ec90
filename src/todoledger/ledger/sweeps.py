"""Running a parameter sweep, above the façade: the combinations' runs in the
sweep's order, every repeat recorded (receipt, numbers and environment) as
it finishes, and an item completed after its last repeat. An interrupted
run, even by SIGKILL, resumes where it stopped: finished repeats and
combinations never run again.

A combination with a lifecycle runs as the seeds ran a server configuration:

1. `setup` starts (in its own process group, recorded in the ledger at once);
2. `ready` is polled every second until it holds; a timeout, or a setup that
   exits first, records the combination as failed with the setup's output tail;
3. `warmup` runs, not counted; then the repeats;
4. `teardown` runs and the setup's process group is ended, always: after the
   last repeat, on a failure, on Ctrl-C or SIGTERM, and first thing in the
   next `sweep run` after a SIGKILL. "Ended" means every thread of the group
   gone and the ready check's port free to bind again; only then does the next
   setup start;
5. `clean` is polled every second after the teardown until it holds, or the
   sweep stops with one line naming what was left (its last output), so no
   configuration is measured beside a zombie.

A ready check's answer, and each counted run, count only while the setup is
alive and, where this machine shows it, owns the ready check's port.

One process runs a sweep at a time: `sweep run` takes the sweep's runner lease
(host, pid, its start time, a heartbeat every 5 s from a thread). A second
`sweep run` refuses in one line while that runner lives, and never touches its
processes; a setup a dead runner left is torn down on resume only on its own host.

Defining a sweep and its results are `Ledger.add_sweep` and `Ledger.sweep_results`.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import Any

from todoledger.core import sweep as core
from todoledger.core.model import LedgerError
from todoledger.core.timefmt import now
from todoledger.core.verification import CheckRow, Receipt, tail
from todoledger.defaults import default_plan, default_writer
from todoledger.ledger.ledger import Ledger

TYPE_CHECKING = False
if TYPE_CHECKING:
    from todoledger.checks.lifecycle import Setup
    from todoledger.checks.run import Outcome
    from todoledger.core.checkspec import Check

Progress = Callable[[dict[str, Any]], None]


def run(
    lg: Ledger,
    name: str,
    *,
    parallel: int = 1,
    plan: str | None = None,
    writer: str | None = None,
    cwd: str | None = None,
    on_progress: Progress | None = None,
    stale: bool = False,
    ready_interval: float = core.READY_INTERVAL,
) -> dict[str, Any]:
    """Run every pending combination (`stale`: and the completed ones whose runs
    went stale), each `repeat` times in the sweep's order. The answer's `stopped`
    is the one line that says why it stopped early (a clean check, a signal)."""
    from todoledger.checks import lifecycle
    from todoledger.checks import run as runner

    # each repeat's receipt names who ran it
    runs = _Sweep(
        lg, name, plan or default_plan(), writer or default_writer(lg.token_holder), cwd or os.getcwd()
    )
    runs.progress, runs.interval = on_progress, ready_interval
    pid = os.getpid()
    lg.claim_sweep_runner(name, pid=pid, ticks=lifecycle.start_ticks(pid), plan=runs.plan, writer=runs.writer)
    beat = _Heartbeat(lg, name, runs.plan, pid)
    runs.heartbeat = beat
    beat.start()
    try:
        with runner.interruptible():
            try:
                runs.resume()
                if runs.stopped is None:
                    runs.go(parallel, stale)
            finally:
                runs.end_live()
        if runs.stopped is None and runs.signal() is None:
            lg.finish_sweep(name, plan=runs.plan, writer=runs.writer)
    finally:
        beat.finish()
        lg.release_sweep_runner(name, pid=pid, plan=runs.plan)
    return runs.answer()


class _Heartbeat(threading.Thread):
    """The runner's heartbeat: a row update every `BEAT` seconds from a connection of
    its own (a connection is not shared between threads), never an event; told of
    the next combination, it writes at once, off the runner's own path."""

    def __init__(self, lg: Ledger, name: str, plan: str, pid: int) -> None:
        super().__init__(name=f"todoledger-sweep-{name}-heartbeat", daemon=True)
        self.lg, self.name_, self.plan, self.pid = lg, name, plan, pid
        self.poke = threading.Event()
        self.stopping = False
        self.doing: str | None = None

    def tell(self, doing: str) -> None:
        self.doing = doing
        self.poke.set()

    def run(self) -> None:
        from todoledger.ledger.sweeprows import BEAT

        twin: Ledger | None = None
        try:
            while True:
                self.poke.wait(BEAT)
                self.poke.clear()
                if self.stopping:
                    return
                try:
                    twin = twin or self.lg.twin()
                    twin.beat_sweep_runner(self.name_, pid=self.pid, doing=self.doing, plan=self.plan)
                except (
                    Exception
                ):  # a missed beat (the ledger busy, a lost connection): the next one tries again
                    if twin is not None:
                        twin.close()
                    twin = None
        finally:
            if twin is not None:
                twin.close()

    def finish(self) -> None:
        self.stopping = True
        self.poke.set()
        self.join(timeout=10)


class _Live:
    """The setup of the combination being measured."""

    def __init__(self, index: int, item: str, combo: dict[str, str], setup: Setup, seq: int) -> None:
        self.index, self.item, self.combo, self.setup, self.seq = index, item, combo, setup, seq
        self.ready: dict[str, Any] | None = None
        # True right after a check found the setup serving (its ready answer, or the check after a
        # run) with nothing run since: that check is the next run's check before, already made.
        self.vouched = False


class _Sweep:
    """One `sweep run`: its work, the setup that is up, and what it counted."""

    def __init__(self, lg: Ledger, name: str, plan: str, writer: str, cwd: str) -> None:
        self.lg, self.name, self.plan, self.writer, self.cwd = lg, name, plan, writer, cwd
        self.progress: Progress | None = None
        self.interval = core.READY_INTERVAL
        self.started = time.monotonic()
        self.counts = {"runs": 0, "failed": 0, "warmups": 0, "setups": 0}
        self.ready_ms = 0
        self.teardown_ms = 0  # the teardowns' own waits: the group's end and the port's release
        self.stopped: str | None = None
        self.live: _Live | None = None
        self.lock = threading.Lock()
        self.combinations = 0
        self.pending = 0
        self.sweep: core.Sweep | None = None
        self.base: dict[str, Any] | None = None
        self.logs: str | None = None
        self.signalled: str | None = None  # the signal that stopped this run, once one did
        self.heartbeat: _Heartbeat | None = None

    # the whole run --------------------------------------------------------------------------
    def resume(self) -> None:
        """Tear down what a killed run left (its setups never torn down), first."""
        from todoledger.checks import lifecycle

        left = self.lg.sweep_live_setups(self.name, plan=self.plan)
        if not left:
            return
        sweep = self._definition()
        here = lifecycle.host()
        for s in left:
            if s["host"] != here:
                raise LedgerError(
                    f"sweep {self.name}: a setup it started (pid {s['pid']}) is recorded as running on"
                    f" {s['host']}, not on {here}: run `todoledger sweep run {self.name}` there to tear it down"
                    " first; nothing was run"
                )
            setup = lifecycle.Setup(int(s["pid"]), s["ticks"], s["log"])
            self._tell("resume", s["params"], f"tearing down the setup a killed run left (pid {s['pid']})")
            self._teardown(sweep, s["item"], s["params"], setup, s["seq"], "torn down on resume after a kill")
            if self.stopped is not None:
                return

    def go(self, parallel: int, stale: bool) -> None:
        sweep, combinations, work = self.lg.sweep_work(self.name, plan=self.plan, stale=stale)
        self.sweep, self.combinations, self.pending = sweep, combinations, len(work)
        if not work:
            return
        # A sweep runs where it was added, whoever runs it (as every check does): its
        # combinations' checks record that folder and their writer's PATH.
        self.cwd = work[0][1].cwd or self.cwd
        serial = sweep.has_lifecycle or sweep.order != "grouped"
        if parallel > 1 and serial:
            raise LedgerError(
                f"sweep {self.name}: --parallel: a sweep with a setup, a ready or clean check, or an order"
                " other than grouped runs one combination at a time; nothing was run"
            )
        from todoledger.checks import environment

        self.base = environment.snapshot(self.cwd)
        if sweep.clean is not None and not self._clean_first(sweep, work[0][2], work[0][1].item):
            return
        if not serial:
            self._grouped(sweep, work, parallel)
            return
        todo = {index: sweep.repeat - made for index, _, _, made in work}
        order = core.schedule(sweep, todo, combinations)
        by_index = {index: (check, combo, made) for index, check, combo, made in work}
        made_now = {index: made for index, _, _, made in work}
        failed: set[int] = set()
        warmed: set[int] = set()
        current: int | None = None
        from todoledger.checks import run as runner

        for index in order:
            if runner.stopping() is not None or self.stopped is not None:
                break
            check, combo, _ = by_index[index]
            if index in failed:
                continue
            if index != current:
                if current is not None:
                    self._end_block(sweep, current, by_index[current][1], by_index[current][0].item)
                    current = None
                    if self.stopped is not None:
                        break
                current = index
                if not self._begin_block(sweep, index, check, combo, made_now[index], index not in warmed):
                    failed.add(index)
                    continue
                warmed.add(index)
            made_now[index] += 1
            if not self._repeat(sweep, index, check, combo, made_now[index]):
                made_now[index] -= 1
                failed.add(index)
        # After a signal the setup that is up is torn down by `end_live`; a clean check alone waits.
        if current is not None and runner.stopping() is None:
            self._end_block(sweep, current, by_index[current][1], by_index[current][0].item)

    def end_live(self) -> None:
        """Whatever happened (a stop, an error), the setup that is up is torn down."""

        if self.live is None or self.sweep is None:
            return
        signal_name = self.signal()
        why = f"interrupted ({signal_name})" if signal_name else "stopped by an error"
        live, self.live = self.live, None
        self._teardown(self.sweep, live.item, live.combo, live.setup, live.seq, why, live.ready)

    def signal(self) -> str | None:
        from todoledger.checks import run as runner

        if self.signalled is None:
            self.signalled = runner.stopping()
        return self.signalled

    def answer(self) -> dict[str, Any]:
        signal_name = self.signal()
        stopped = self.stopped
        if signal_name is not None and stopped is None:
            stopped = f"sweep {self.name} was stopped ({signal_name}): the run that was going was ended" + (
                " and its setup torn down" if self.counts["setups"] else ""
            )
        return {
            "plan": self.plan,
            "sweep": self.name,
            "combinations": self.pending,
            **self.counts,
            "stopped": stopped,
            "ready_ms": self.ready_ms,
            "teardown_ms": self.teardown_ms,
        }

    # one combination's block: setup, ready, warm-up ... teardown, clean ----------------------
    def _begin_block(
        self, sweep: core.Sweep, index: int, check: CheckRow, combo: dict[str, str], made: int, warm: bool
    ) -> bool:
        from todoledger.checks import lifecycle

        if self.heartbeat is not None:
            self.heartbeat.tell(f"{_params(combo)} ({index + 1} of {self.combinations})")
        if sweep.setup is not None:
            command = sweep.setup_command(combo)
            assert command is not None
            log = os.path.join(self._logs(), f"{check.item}-{self.counts['setups'] + 1}.log")
            setup = lifecycle.start(command, self.cwd, log)
            try:
                seq = self._record_start(check, setup, command, log)
            except BaseException:
                lifecycle.end_group(setup)  # never a server the ledger does not know of
                raise
            lifecycle.release(setup)  # recorded: only now does its command run
            self.live = _Live(index, check.item, combo, setup, seq)
            self.counts["setups"] += 1
            self._tell("setup", combo, f"setup started (pid {setup.pid}): {command}", index)
        ready = sweep.ready_check(combo)
        if ready is not None:
            ok, found = self._wait_ready(sweep, ready)
            if self.live is not None:
                self.live.ready = found  # recorded with its teardown
                self.live.vouched = ok
            else:
                self.lg.sweep_note(self.name, check.item, "ready", found, plan=self.plan, writer=self.writer)
            self._tell("ready", combo, found["line"], index)
            if not ok:
                output = found["line"]
                if self.live is not None:
                    output += "\n--- the setup's output (tail) ---\n" + lifecycle.log_tail(
                        self.live.setup.log
                    )
                self._fail(sweep, check, combo, "error", output, made)
                return False
        if sweep.setup is not None or warm:
            for n in range(1, sweep.warmup + 1):
                if self.live is not None:
                    self.live.vouched = False
                outcome = self._run_check(check)
                self.counts["warmups"] += 1
                self._tell(
                    "warmup", combo, f"warm-up {n}/{sweep.warmup} {outcome.result} (not counted)", index
                )
                if outcome.result != "holds":
                    self._fail(
                        sweep, check, combo, outcome.result, f"{outcome.output}\nthe warm-up run failed", made
                    )
                    return False
        return True

    def _record_start(self, check: CheckRow, setup: Setup, command: str, log: str) -> int:
        from todoledger.checks import lifecycle

        return self.lg.sweep_setup_started(
            self.name,
            check.item,
            host=lifecycle.host(),
            pid=setup.pid,
            ticks=setup.ticks,
            command=command,
            log=log,
            plan=self.plan,
            writer=self.writer,
        )

    def _end_block(self, sweep: core.Sweep, index: int, combo: dict[str, str], item: str) -> None:
        if self.live is not None:
            live, self.live = self.live, None
            self._teardown(sweep, live.item, live.combo, live.setup, live.seq, "done", live.ready)
            return
        if sweep.clean is not None:
            clean = self._clean(sweep, combo)
            self.lg.sweep_note(self.name, item, "clean", clean, plan=self.plan, writer=self.writer)
            self._after_clean(sweep, combo, clean)

    def _teardown(
        self,
        sweep: core.Sweep,
        item: str,
        combo: dict[str, str],
        setup: Setup,
        seq: int,
        outcome: str,
        ready: dict[str, Any] | None = None,
    ) -> None:
        from todoledger.checks import lifecycle

        how: dict[str, Any] = {}
        command = sweep.teardown_command(combo)
        if command is not None:
            code, output = lifecycle.run_command(command, self.cwd)
            how |= {"command": command, "code": code, "output": tail(output, 300)}
        waiting = time.monotonic()
        how["group"] = lifecycle.end_group(setup)
        ended = not how["group"].startswith("still running")
        polled = sweep.ready_check(combo)
        where = lifecycle.address(polled) if polled is not None else None
        said_group = how["group"]
        if ended and where is not None:
            host, port = where
            free, waited = lifecycle.wait_port_free(host, port, sweep.teardown_timeout)
            how["port"] = {"port": port, "free": free, "waited_s": round(waited, 3)}
            if free is False:
                who = ", ".join(lifecycle.listeners(port)) or "a process this machine does not show"
                said_group = (
                    f"{how['group'].replace('ended', 'exited')}, but port {port} is still held"
                    f" {sweep.teardown_timeout:g} s later, by {who}"
                )
                self.stopped = (
                    f"sweep {self.name} stopped after {_params(combo)}: its teardown could not free"
                    f" port {port} within {sweep.teardown_timeout:g} s (held by {who})"
                )
                outcome = f"{outcome}; port {port} still held"
            elif free is None:
                said_group += f"; port {port} ({host}) cannot be probed from here"
            else:
                said_group += f", port {port} free after {waited:.1f} s"
        elif ended:
            said_group += (
                "; no port to wait for"
                if polled is None
                else f"; no port to wait for ({polled.text()} names none)"
            )
        else:
            self.stopped = (
                f"sweep {self.name} stopped after {_params(combo)}: its teardown left {how['group']}"
            )
            outcome = f"{outcome}; processes left"
        how["said"] = said_group
        self.teardown_ms += int((time.monotonic() - waiting) * 1000)
        # A teardown that could not free what the setup held has stopped the sweep already.
        clean = self._clean(sweep, combo) if sweep.clean is not None and self.stopped is None else None
        if clean is not None and clean["result"] != "holds":
            outcome = f"{outcome}; clean check {clean['result']}"
        self.lg.sweep_setup_ended(
            self.name,
            item,
            seq,
            teardown=how,
            clean=clean,
            outcome=outcome,
            ready=ready,
            plan=self.plan,
            writer=self.writer,
        )
        said = f"teardown: {how.get('command') or 'the setup process group'}: {said_group}"
        if command is not None:
            said += f" (teardown exit {how['code']})"
        self._tell("teardown", combo, said)
        if clean is not None:
            self._after_clean(sweep, combo, clean)

    def _clean(self, sweep: core.Sweep, combo: dict[str, str]) -> dict[str, Any]:
        """Poll the clean check every `interval` until it holds or `clean_timeout` runs
        out (right after a teardown, the driver may still list the exiting process).
        A failure keeps its last output, or says it had none: never an empty reason."""
        from todoledger.checks import run as runner

        check = sweep.clean_check(combo)
        assert check is not None
        if self.signal() is not None:
            runner.carry_on()  # the teardown after a Ctrl-C is proven clean too
        start = time.monotonic()
        polls = 0
        while True:
            outcome = runner.run(check, runner.Inputs(cwd=self.cwd))
            polls += 1
            waited = time.monotonic() - start
            if outcome.result == "holds" or waited >= sweep.clean_timeout or runner.stopping() is not None:
                break
            time.sleep(max(0.0, min(self.interval, sweep.clean_timeout - waited)))
        line = _last(outcome.output) or f"exit {outcome.code}, no output: {check.describe()}"
        found = {"check": check.describe(), "result": outcome.result, "line": line, "polls": polls}
        if outcome.result != "holds":
            found["line"] = f"{line} (still after {polls} polls in {waited:.1f} s)"
        return found

    def _after_clean(self, sweep: core.Sweep, combo: dict[str, str], clean: dict[str, Any]) -> None:
        params = _params(combo)
        if clean["result"] == "holds":
            self._tell("clean", combo, f"clean: {clean['check']}: holds")
            return
        self.stopped = (
            f"sweep {self.name} stopped after {params}: its clean check ({clean['check']}) {clean['result']}"
            f" after the teardown: {clean['line']}"
        )
        self._tell("clean", combo, f"clean: {clean['check']}: {clean['result']}: {clean['line']}")

    def _clean_first(self, sweep: core.Sweep, combo: dict[str, str], item: str) -> bool:
        """Nothing is measured beside what an earlier run left: the clean check holds before the first setup."""
        clean = self._clean(sweep, combo)
        if clean["result"] == "holds":
            return True
        self.lg.sweep_note(
            self.name, item, "clean", clean | {"when": "before"}, plan=self.plan, writer=self.writer
        )
        self.stopped = (
            f"sweep {self.name} not started: its clean check ({clean['check']}) {clean['result']}"
            f" before the first combination: {clean['line']}"
        )
        return False

    def _wait_ready(self, sweep: core.Sweep, ready: Check) -> tuple[bool, dict[str, Any]]:
        """Poll the ready check every `interval` until it holds or the ready timeout runs out."""
        from todoledger.checks.ready import wait_ready

        setup = self.live.setup if self.live is not None else None
        ok, found, waited_ms = wait_ready(ready, sweep.ready_timeout, self.interval, self.cwd, setup)
        self.ready_ms += waited_ms
        return ok, found

    # runs -----------------------------------------------------------------------------------
    def _repeat(self, sweep: core.Sweep, index: int, check: CheckRow, combo: dict[str, str], k: int) -> bool:
        """One counted run, recorded; False when it failed."""
        from todoledger.checks import tree

        command = sweep.command(combo)
        before = None if self.live is not None and self.live.vouched else self._setup_serves(combo)
        if before is not None:
            self._fail(
                sweep, check, combo, "error", f"before the run: {before}; the run is not measured", k - 1
            )
            return False
        if self.live is not None:
            self.live.vouched = False
        outcome = self._run_check(check)
        after = self._setup_serves(combo)
        if self.live is not None:
            self.live.vouched = after is None
        values = core.extract(sweep, outcome.output) if outcome.result == "holds" and after is None else {}
        missing = [n for n, _ in sweep.metrics if n not in values]
        result, note = outcome.result, ""
        if after is not None:
            result, note = "error", f"\nafter the run: {after}; the run is not counted"
        elif result == "holds" and missing:
            result, note = "fails", f"\nno {', '.join(missing)} in the output"
        setup = sweep.setup_command(combo)
        from todoledger.checks import lifecycle

        names = lifecycle.command_inputs(self.cwd, command, setup)
        env = dict(self.base or {}) | {"command": command, "params": combo}
        if setup is not None:
            env["setup"] = setup
        receipt = Receipt(
            check.id,
            check.item,
            check.check.canonical(),
            result,
            outcome.code,
            outcome.duration_ms,
            outcome.output + note,
            now(),
            self.writer,
            tree.inputs_state(self.cwd, sweep.watch, names),
            env,
        )
        with self.lock:
            self.lg.record_sweep_repeat(sweep, check, receipt, values, k, plan=self.plan, writer=self.writer)
            self.counts["runs"] += 1
            if result != "holds":
                self.counts["failed"] += 1
            if self.progress is not None:
                self.progress(
                    {
                        "phase": "run",
                        "combination": index + 1,
                        "of": self.combinations,
                        "params": combo,
                        "repeat": k,
                        "repeats": sweep.repeat,
                        "result": result,
                        "values": values,
                        "elapsed": time.monotonic() - self.started,
                        "line": receipt.line(),
                    }
                )
        return result == "holds"

    def _setup_serves(self, combo: dict[str, str]) -> str | None:
        """While a setup is up: None if it is alive and owns the ready check's port
        (or the owner cannot be seen), else why a run now would not measure it."""
        if self.live is None or self.sweep is None:
            return None
        from todoledger.checks.ready import setup_serves

        ready = self.sweep.ready_check(combo)
        if ready is None:
            from todoledger.checks import lifecycle

            alive = lifecycle.exited(self.live.setup) is None and bool(lifecycle.members(self.live.setup.pid))
            return None if alive else "the setup is no longer running"
        return setup_serves(self.live.setup, ready)

    def _run_check(self, check: CheckRow) -> Outcome:
        from todoledger.checks import run as runner

        return runner.run(check.check, runner.Inputs(cwd=check.cwd or self.cwd, path=check.path))

    def _fail(
        self, sweep: core.Sweep, check: CheckRow, combo: dict[str, str], result: str, output: str, made: int
    ) -> None:
        """The combination failed before a counted run: one receipt says why; it stays to run again."""
        receipt = Receipt(
            check.id,
            check.item,
            check.check.canonical(),
            result if result != "holds" else "error",
            None,
            0,
            tail(output),
            now(),
            self.writer,
            None,
            dict(self.base or {}) | {"command": sweep.command(combo), "params": combo},
        )
        with self.lock:
            self.lg.record_sweep_repeat(sweep, check, receipt, {}, made, plan=self.plan, writer=self.writer)
            self.counts["failed"] += 1

    def _grouped(
        self, sweep: core.Sweep, work: list[tuple[int, CheckRow, dict[str, str], int]], parallel: int
    ) -> None:
        """No lifecycle, grouped: each combination's runs one after another, `parallel` combinations at a time."""

        def combination(index: int, check: CheckRow, combo: dict[str, str], made: int) -> None:
            for n in range(1, sweep.warmup + 1):
                outcome = self._run_check(check)
                with self.lock:
                    self.counts["warmups"] += 1
                self._tell(
                    "warmup", combo, f"warm-up {n}/{sweep.warmup} {outcome.result} (not counted)", index
                )
                if outcome.result != "holds":
                    self._fail(
                        sweep, check, combo, outcome.result, f"{outcome.output}\nthe warm-up run failed", made
                    )
                    return
            for k in range(made + 1, sweep.repeat + 1):
                if not self._repeat(sweep, index, check, combo, k):
                    return  # this combination stays pending; the next `sweep run` tries it again

        if parallel <= 1 or len(work) <= 1:
            for job in work:
                combination(*job)
            return
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=min(parallel, len(work))) as pool:
            for future in [pool.submit(combination, *job) for job in work]:
                future.result()

    # helpers --------------------------------------------------------------------------------
    def _definition(self) -> core.Sweep:
        if self.sweep is None:
            self.sweep = core.Sweep.from_dict(
                self.lg.sweep_definition(self.name, plan=self.plan)["definition"]
            )
        return self.sweep

    def _logs(self) -> str:
        if self.logs is None:
            import tempfile

            self.logs = tempfile.mkdtemp(prefix=f"todoledger-sweep-{self.name}-")
        return self.logs

    def _tell(self, phase: str, combo: dict[str, str], line: str, index: int | None = None) -> None:
        if self.progress is None:
            return
        with self.lock:
            self.progress(
                {
                    "phase": phase,
                    "combination": None if index is None else index + 1,
                    "of": self.combinations,
                    "params": combo,
                    "line": line,
                    "elapsed": time.monotonic() - self.started,
                }
            )


def _params(combo: dict[str, str]) -> str:
    return " ".join(f"{k}={v}" for k, v in combo.items())


def _last(output: str) -> str:
    return next((ln.strip() for ln in reversed(output.splitlines()) if ln.strip()), "")[:600]
