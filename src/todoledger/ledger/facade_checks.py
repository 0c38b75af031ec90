"""`Ledger`'s check methods: gates, receipts, trust and metrics (see
`ledger.gates` and `ledger.checkrecords`), and the records of parameter sweeps
(`ledger.sweeprows`; running them is `ledger.sweeps`)."""

from __future__ import annotations

from todoledger.ledger.facade import Facade

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence
    from typing import Any

    from todoledger.core import sweep as sweep_core
    from todoledger.core.verification import CheckRow, Receipt


class CheckMethods(Facade):
    """Checks, metrics and sweeps' records."""

    def add_check(
        self,
        ref: str,
        spec: str,
        options: dict[str, Any] | None = None,
        *,
        role: str = "gate",
        plan: str | None = None,
        writer: str | None = None,
        trusted: bool = True,
        stand_in: bool = False,
    ) -> dict[str, Any]:
        """Give an item a check (a completion gate by default); `trusted=False` for
        checks that did not come from this machine's user (import, HTTP); `stand_in`
        for one against a stand-in (never proof, until a person clears the mark)."""
        from todoledger.ledger import checkrecords

        return checkrecords.add_check(
            self._unit,
            *self._who(plan, writer),
            ref,
            spec,
            options,
            role=role,
            trusted=trusted,
            stand_in=stand_in,
        )

    def clear_stand_in(
        self, check_id: str, *, plan: str | None = None, writer: str | None = None
    ) -> dict[str, Any]:
        """A person says the check runs against the real thing (`gate real`)."""
        from todoledger.ledger import checkrecords

        return checkrecords.clear_stand_in(self._unit, *self._who(plan, writer), check_id)

    def remove_check(
        self, check_id: str, *, plan: str | None = None, writer: str | None = None, force: bool = False
    ) -> dict[str, Any]:
        """Remove a check; not one a completion has not passed, unless `force` (recorded)."""
        from todoledger.ledger import checkrecords

        return checkrecords.remove_check(self._unit, *self._who(plan, writer), check_id, force=force)

    def checks(self, refs: Sequence[str] = (), *, plan: str | None = None) -> list[CheckRow]:
        """The checks of the plan, or of the named items and check ids."""
        from todoledger.ledger import checkrecords

        return checkrecords.checks(self._unit, self._plan(plan), refs)

    def trust(
        self,
        refs: Sequence[str] = (),
        *,
        plan: str | None = None,
        writer: str | None = None,
        approve: Callable[[CheckRow], bool] = lambda row: True,
    ) -> list[dict[str, Any]]:
        """Approve the exact text of untrusted checks, `approve` asked for each; returns those approved."""
        from todoledger.ledger import checkrecords

        return checkrecords.trust(self._unit, *self._who(plan, writer), refs, approve=approve)

    def awaiting_trust(
        self, refs: Sequence[str] = (), *, plan: str | None = None, writer: str | None = None
    ) -> list[CheckRow]:
        """The checks this writer could approve with `trust`: untrusted ones and,
        for a person, agents' own checks that no person has approved."""
        from todoledger.ledger import checkrecords

        return checkrecords.awaiting_trust(self._unit, *self._who(plan, writer), refs)

    def failing_history(self, *, plan: str | None = None) -> dict[str, int]:
        """check id -> how many receipts saw it fail (absent: never seen failing)."""
        from todoledger.ledger import checkrecords

        return checkrecords.failing_history(self._unit, self._plan(plan))

    def accept_metric(
        self, ref: str, name: str, *, plan: str | None = None, writer: str | None = None
    ) -> dict[str, Any]:
        """A person accepts the typed values of a metric on an item, so a `metric:` gate counts them."""
        from todoledger.ledger import checkrecords

        return checkrecords.accept_metrics(self._unit, *self._who(plan, writer), ref, name)

    def verify(
        self,
        refs: Sequence[str] = (),
        *,
        plan: str | None = None,
        writer: str | None = None,
        cwd: str | None = None,
        on_result: Callable[[CheckRow, Receipt], None] | None = None,
        roles: Sequence[str] | None = None,
    ) -> dict[str, Any]:
        """Run the trusted checks of the plan (or of the named items) in parallel
        and store a receipt for each; untrusted checks are skipped and listed."""
        from todoledger.core.verification import ROLES
        from todoledger.ledger import receipts

        return receipts.verify(
            self._unit,
            *self._who(plan, writer),
            refs,
            cwd=cwd,
            on_result=on_result,
            roles=ROLES if roles is None else roles,
        )

    def record_metrics(
        self,
        ref: str,
        metrics: dict[str, float] | Sequence[tuple[str, float]],
        *,
        plan: str | None = None,
        writer: str | None = None,
    ) -> list[dict[str, Any]]:
        """Store numbers on an item (each a new run of that metric) with their events."""
        from todoledger.ledger import checkrecords

        return checkrecords.record_metrics(self._unit, *self._who(plan, writer), ref, metrics)

    def metrics(self, ref: str | None = None, *, plan: str | None = None) -> list[dict[str, Any]]:
        """The numbers recorded on the plan's items (or on one item)."""
        from todoledger.ledger import checkrecords

        return checkrecords.metrics(self._unit, self._plan(plan), ref)

    def receipts(self, ref: str | None = None, *, plan: str | None = None) -> list[dict[str, Any]]:
        """The receipts of the plan's checks (or of one item's)."""
        from todoledger.ledger import checkrecords

        return checkrecords.receipts(self._unit, self._plan(plan), ref)

    def sweep_repeats(self, plan: str | None = None) -> dict[str, int]:
        """item -> how many runs its sweep asks for."""
        from todoledger.ledger import checkrecords

        return checkrecords.sweep_repeats(self._unit, self._plan(plan))

    def unproven_by(self, writer: str, also: Iterable[str] = ()) -> list[dict[str, Any]]:
        """Completed items of `writer` (and those `also` names) whose gates fail,
        never ran or went stale: what a Stop gate names."""
        from todoledger.ledger import gates

        return gates.unproven_by(self._unit, writer, also)

    # sweeps' records (running them is `ledger.sweeps`) ------------------------------------
    def add_sweep(
        self,
        name: str,
        *,
        template: str,
        params: Sequence[str],
        run: str,
        metrics: Sequence[str],
        repeat: int = 1,
        baseline: Sequence[str] = (),
        keep: str | None = None,
        timeout: float = 3600.0,
        plan: str | None = None,
        writer: str | None = None,
        stand_in: bool = False,
        **lifecycle: Any,
    ) -> dict[str, Any]:
        """Define a sweep and expand it into items (a parent, one child per combination).
        `lifecycle`: setup, ready, ready_options, ready_timeout, teardown, clean,
        clean_options, warmup, order, seed, restarts, watch (`core.sweep.define`);
        `stand_in`: it runs against stand-ins (simulated figures, never proof)."""
        from todoledger.ledger import sweeprows

        return sweeprows.add(
            self._unit,
            *self._who(plan, writer),
            name,
            template=template,
            params=params,
            run=run,
            metrics=metrics,
            repeat=repeat,
            baseline=baseline,
            keep=keep,
            timeout=timeout,
            stand_in=stand_in,
            **lifecycle,
        )

    def sweep_definition(self, name: str, *, plan: str | None = None) -> dict[str, Any]:
        """A sweep's definition, its author, its approval and each combination's commands."""
        from todoledger.ledger import sweeprows

        return sweeprows.definition(self._unit, self._plan(plan), name)

    def approve_sweep(
        self,
        name: str,
        *,
        plan: str | None = None,
        writer: str | None = None,
        shown: Callable[[dict[str, Any]], bool] = lambda d: True,
    ) -> dict[str, Any] | None:
        """A person approves every command of a sweep (`shown` is asked first); None if not."""
        from todoledger.ledger import sweeprows

        return sweeprows.approve(self._unit, *self._who(plan, writer), name, shown=shown)

    def sweep_work(
        self, name: str, *, plan: str | None = None, stale: bool = False
    ) -> tuple[sweep_core.Sweep, int, list[tuple[int, CheckRow, dict[str, str], int]]]:
        """The sweep, its number of combinations, and those still to run (`stale`:
        and the completed ones whose runs went stale); refuses a sweep no person approved."""
        from todoledger.ledger import sweeprows

        return sweeprows.pending(self._unit, self._plan(plan), name, stale=stale)

    def record_sweep_repeat(
        self,
        sweep: sweep_core.Sweep,
        check: CheckRow,
        receipt: Receipt,
        values: dict[str, float],
        repeat: int,
        *,
        plan: str | None = None,
        writer: str | None = None,
    ) -> None:
        """One repeat of a combination: its receipt, its numbers, and after the
        last repeat the completed item, in one transaction."""
        from todoledger.ledger import sweeprows

        sweeprows.record_repeat(self._unit, *self._who(plan, writer), sweep, check, receipt, values, repeat)

    def claim_sweep_runner(
        self, name: str, *, pid: int, ticks: str | None, plan: str | None = None, writer: str | None = None
    ) -> None:
        """Make process `pid` the sweep's one runner, or refuse in one line naming the live one."""
        from todoledger.ledger import sweeprows

        sweeprows.claim_runner(self._unit, *self._who(plan, writer), name, pid=pid, ticks=ticks)

    def sweep_busy(self, name: str, *, plan: str | None = None) -> str | None:
        """The line `claim_sweep_runner` would refuse with while another live runner runs the sweep."""
        from todoledger.ledger import sweeprows

        return sweeprows.runner_busy(self._unit, self._plan(plan), name)

    def beat_sweep_runner(
        self, name: str, *, pid: int, doing: str | None = None, plan: str | None = None
    ) -> bool:
        """The runner's heartbeat (and the combination it is on); False once it is not the runner."""
        from todoledger.ledger import sweeprows

        return sweeprows.beat_runner(self._unit, self._plan(plan), name, pid=pid, doing=doing)

    def release_sweep_runner(self, name: str, *, pid: int, plan: str | None = None) -> None:
        """The runner is done: the sweep is free to run again."""
        from todoledger.ledger import sweeprows

        sweeprows.release_runner(self._unit, self._plan(plan), name, pid=pid)

    def sweep_live_setups(self, name: str, *, plan: str | None = None) -> list[dict[str, Any]]:
        """The setups the sweep started and never tore down."""
        from todoledger.ledger import sweeprows

        return sweeprows.live_setups(self._unit, self._plan(plan), name)

    def sweep_setup_started(
        self,
        name: str,
        item: str,
        *,
        host: str,
        pid: int,
        ticks: str | None,
        command: str,
        log: str,
        plan: str | None = None,
        writer: str | None = None,
    ) -> int:
        """Record a setup just started; its record's key."""
        from todoledger.ledger import sweeprows

        return sweeprows.setup_started(
            self._unit,
            *self._who(plan, writer),
            name,
            item,
            host=host,
            pid=pid,
            ticks=ticks,
            command=command,
            log=log,
        )

    def sweep_setup_ended(
        self,
        name: str,
        item: str,
        seq: int,
        *,
        teardown: dict[str, Any],
        clean: dict[str, Any] | None,
        outcome: str,
        ready: dict[str, Any] | None = None,
        plan: str | None = None,
        writer: str | None = None,
    ) -> None:
        """A setup torn down: its ready check's outcome, how it ended, its clean check, and why."""
        from todoledger.ledger import sweeprows

        sweeprows.setup_ended(
            self._unit,
            *self._who(plan, writer),
            name,
            item,
            seq,
            teardown=teardown,
            clean=clean,
            outcome=outcome,
            ready=ready,
        )

    def sweep_note(
        self,
        name: str,
        item: str,
        field: str,
        value: dict[str, Any],
        *,
        plan: str | None = None,
        writer: str | None = None,
    ) -> None:
        """An event of a sweep's lifecycle on one of its items."""
        from todoledger.ledger import sweeprows

        sweeprows.note(self._unit, *self._who(plan, writer), name, item, field, value)

    def finish_sweep(self, name: str, *, plan: str | None = None, writer: str | None = None) -> None:
        """Complete the sweep's parent once every combination is completed."""
        from todoledger.ledger import sweeprows

        sweeprows.finish(self._unit, *self._who(plan, writer), name)

    def sweeps(self, plan: str | None = None) -> list[dict[str, str]]:
        """The sweeps of a plan, oldest first: name and parent item."""
        from todoledger.ledger import sweeprows

        return sweeprows.listing(self._unit, self._plan(plan))

    def sweep_exists(self, name: str, *, plan: str | None = None) -> bool:
        """Is there a sweep of this name in the plan?"""
        from todoledger.ledger import sweeprows

        return sweeprows.exists(self._unit, self._plan(plan), name)

    def sweep_results(
        self, name: str, *, plan: str | None = None, include_stale: bool = False
    ) -> dict[str, Any]:
        """Per combination and metric: median/min/max/spread, ratio to the baseline,
        verdict, flags; stale runs left out unless `include_stale`."""
        from todoledger.ledger import sweeprows

        return sweeprows.results(self._unit, self._plan(plan), name, include_stale=include_stale)
