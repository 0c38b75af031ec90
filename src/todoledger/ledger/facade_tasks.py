"""`Ledger`'s task methods: MCP Tasks as rows of the ledger, bound to their
principal, with a worker's lease and heartbeat (see `ledger.tasks`)."""

from __future__ import annotations

from todoledger.ledger.facade import Facade

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class TaskMethods(Facade):
    """Tasks: create, read (only the principal's own), move, lease, cancel, list."""

    def create_task(
        self,
        tool: str,
        arguments: dict[str, Any],
        *,
        principal: str,
        writer: str,
        plan: str,
        message: str,
        cwd: str | None = None,
        poll_ms: int | None = None,
        task_id: str | None = None,
    ) -> dict[str, Any]:
        """A new working task, row and event committed before this returns."""
        from todoledger.ledger import tasks

        return tasks.create(
            self._unit,
            task_id=task_id,
            tool=tool,
            arguments=arguments,
            principal=principal,
            writer=writer,
            plan=plan,
            message=message,
            cwd=cwd,
            poll_ms=tasks.POLL_MS if poll_ms is None else poll_ms,
        )

    def persons_gate(
        self, ref: str, *, plan: str | None = None, writer: str | None = None
    ) -> dict[str, str] | None:
        """The person's gate `writer` may not force past on its own: {check, by}, or None
        (what a forced completion's MCP task waits on: a person's consent)."""
        from todoledger.ledger import readiness

        plan, writer = self._who(plan, writer)
        return readiness.persons_gate(self._unit, plan, ref, writer)

    def gate_consent(self, task_id: str, ref: str, *, plan: str, writer: str) -> dict[str, str] | None:
        """A person's consent to the task's forced completion of `ref`, if given."""
        from todoledger.ledger import tasks

        with self._unit.store.read():
            item_id = self._unit.require(plan, ref).id
        return tasks.gate_consent(self._unit, task_id, plan, item_id, writer)

    def task(self, task_id: str, principal: str | None) -> dict[str, Any] | None:
        """The task if it is `principal`'s (None: any, a person's view), else None."""
        from todoledger.ledger import tasks

        return tasks.get(self._unit, task_id, principal)

    def task_transition(
        self,
        task_id: str,
        status: str,
        *,
        message: str | None = None,
        result: Any = None,
        error: Any = None,
        writer: str | None = None,
        worker: tuple[str, int] | None = None,
    ) -> dict[str, Any] | None:
        """Move an open task (with its event); `worker`: only while it holds the lease."""
        from todoledger.ledger import tasks

        return tasks.transition(
            self._unit,
            task_id,
            status,
            message=message,
            result=result,
            error=error,
            writer=writer,
            worker=worker,
        )

    def task_note(self, task_id: str, message: str, worker: tuple[str, int]) -> None:
        """A working task's progress line (no event: its status is the same)."""
        from todoledger.ledger import tasks

        tasks.note(self._unit, task_id, message, worker)

    def take_task_lease(
        self, task_id: str, held: tuple[Any, Any], host: str, pid: int, ticks: str | None
    ) -> bool:
        """Make (host, pid) the task's worker, if the lease is still `held`."""
        from todoledger.ledger import tasks

        return tasks.take_lease(self._unit, task_id, held, host, pid, ticks)

    def beat_task(self, task_id: str, plan: str, host: str, pid: int) -> dict[str, Any] | None:
        """The worker's heartbeat; the row, or None when the lease is no longer its own."""
        from todoledger.ledger import tasks

        return tasks.beat(self._unit, task_id, plan, host, pid)

    def cancel_task(self, task_id: str, principal: str | None, writer: str) -> dict[str, Any]:
        """Ask the task's worker to stop (LedgerError "task not found" for another principal's)."""
        from todoledger.ledger import tasks

        return tasks.request_cancel(self._unit, task_id, principal, writer)

    def answer_task(self, task_id: str, principal: str | None, responses: dict[str, Any]) -> list[str]:
        """The client's answers to a task's outstanding input requests: the keys taken."""
        from todoledger.ledger import tasks

        return tasks.answer_inputs(self._unit, task_id, principal, responses)

    def gate_waits(self, plan: str | None = None, ref: str | None = None) -> list[dict[str, Any]]:
        """The MCP tasks waiting for a person's consent to force an item's completion
        past a person's gate (`tasks.gate_waits`; `ref`: that item's)."""
        from todoledger.ledger import tasks

        name = self._plan(plan)
        item_id = None
        if ref is not None:
            with self._unit.store.read():
                item_id = self._unit.require(name, ref).id
        return tasks.gate_waits(self._unit, name, item_id)

    def tasks(self, *, finished: bool = False) -> list[dict[str, Any]]:
        """The running and waiting tasks (with `finished`, every one still kept)."""
        from todoledger.ledger import tasks

        return tasks.listing(self._unit, tasks.STATUSES if finished else ("working", "input_required"))
