"""`Ledger`'s history methods: undo, a plan exported and imported as JSON
Lines (see `ledger.history`), and where incremental transcript readers stopped."""

from __future__ import annotations

from todoledger.ledger.facade import Facade

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from typing import Any


class HistoryMethods(Facade):
    """Undo, export and import, and the readers' cursors."""

    def undo(
        self, plan: str | None = None, *, writer: str | None = None, any_writer: bool = False
    ) -> dict[str, Any]:
        """Reverse the writer's last change (with `any_writer`, the plan's last) by inverse events."""
        from todoledger.ledger import history

        return history.undo(self._unit, *self._who(plan, writer), any_writer=any_writer)

    def export(self, plan: str | None = None) -> Iterator[str]:
        """JSON Lines, one item a line in plan order, keys sorted: diffs well in git."""
        from todoledger.ledger import history

        return history.export(self._unit, self._plan(plan))

    def import_jsonl(
        self,
        lines: Iterable[str],
        *,
        plan: str | None = None,
        writer: str | None = None,
        force: bool = False,
    ) -> dict[str, Any]:
        """Make the plan's items match an export; importing the same file twice changes nothing.
        `force`: a person's override of other writers' leases (recorded)."""
        from todoledger.ledger import history

        return history.import_jsonl(self._unit, *self._who(plan, writer), lines, force=force)

    # where incremental transcript readers stopped -----------------------------------
    def cursors(self, sources: list[str]) -> dict[str, tuple[int, str | None]]:
        """Where an incremental reader stopped in each source: (position, fingerprint)."""
        with self._unit.store.read():
            return self._unit.repo.cursors(sources)

    def save_cursors(self, cursors: dict[str, tuple[int, str | None]]) -> None:
        """Remember where an incremental reader stopped in each source."""
        from todoledger.core.timefmt import now

        with self._unit.locked():  # a reader's sources may feed several plans
            self._unit.repo.save_cursors(cursors, now())

    def markdown_layout(self, plan: str | None = None) -> str | None:
        """The shape of the Markdown file the plan was last imported from, if any."""
        with self._unit.store.read():
            return self._unit.repo.markdown_layout(self._plan(plan))

    def save_markdown_layout(self, layout: str, plan: str | None = None) -> None:
        """Keep the shape of the Markdown file just imported into the plan."""
        from todoledger.core.timefmt import now

        plan = self._plan(plan)
        with self._unit.locked(plan):
            self._unit.repo.save_markdown_layout(plan, layout, now())

    def panel(self, list_id: str, plan: str | None = None) -> dict[str, Any]:
        """Claude Code's task list as todoledger last wrote it (todoledger.panel), with
        the plan's revision now: `revision` (the one it showed; None: never written),
        `reset` (Claude deleted the all-completed list), `rows` (row id -> item, hash)."""
        plan = self._plan(plan)
        with self._unit.store.read():
            revision, reset, rows = self._unit.repo.panel(list_id)
            current = self._unit.repo.revision(plan)
        return {"revision": revision, "reset": reset, "rows": rows, "plan_revision": current}

    def save_panel(
        self,
        list_id: str,
        *,
        plan: str | None = None,
        revision: int | None = None,
        reset: bool | None = None,
        rows: dict[str, tuple[str, str]] | None = None,
        gone: Iterable[str] = (),
    ) -> None:
        """Record what a sync wrote to the task list (or a row the hook saw the model
        write): no op and no revision, the panel is a view of the plan."""
        plan = self._plan(plan)
        with self._unit.locked(plan):
            self._unit.repo.save_panel(list_id, plan, revision, reset, rows or {}, list(gone))

    def imported_from_others(self, plan: str, source_prefix: str) -> bool:
        """Does the plan hold imported calls whose source key does not start
        with `source_prefix` (another session's calls)?"""
        with self._unit.store.read():
            return self._unit.repo.has_other_sources(plan, source_prefix)
