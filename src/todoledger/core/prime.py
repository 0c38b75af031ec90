"""The recovery point: a short text an agent reads at the start of a session
or after compaction, so that it continues the plan instead of inventing one.

It goes into the agent's context (SessionStart hooks) and onto terminals
(`todoledger prime`): every text in it is sanitised.
"""

from __future__ import annotations

from todoledger.core.model import DROPPED
from todoledger.core.sanitize import for_terminal as clean

TYPE_CHECKING = False
if TYPE_CHECKING:
    from todoledger.core.view import ItemView, PlanView

MAX_CHARS = 9_000  # Claude Code caps SessionStart context at 10,000 characters
# Items left out of a list, named by id (newest first) so an agent that missed the
# write's reply gets them back; a few lines at most, the rest counted.
DROPPED_SHOWN = 5


def render_prime(view: PlanView, *, recent: int = 5, ready: int = 5) -> str:
    if not view.counts:  # counted over the whole plan: the view may hold only the rows it shows
        return f"todoledger: plan {clean(view.plan)!r} is empty. Write your todo list as usual; it is recorded here.\n"
    lines = [f"todoledger plan {clean(view.plan)!r} (revision {view.revision}): {view.summary()}."]
    if view.in_progress:
        lines.append("In progress:")
        lines += [_line(it) for it in view.in_progress]
    if view.contested:
        lines.append("Closed in the plan while an agent's latest list works on them (ask before redoing):")
        lines += [_line(it) for it in view.contested]
    if view.ready:
        lines.append("Ready next:")
        lines += [_line(it) for it in view.ready[:ready]]
    if view.dropped:
        lines.append("Dropped (left out of a list, not done; listed again to revive):")
        lines += [_dropped_line(it) for it in view.dropped[:DROPPED_SHOWN]]
        more = view.counts.get(DROPPED, len(view.dropped)) - DROPPED_SHOWN
        if more > 0:
            lines.append(f"- and {more} more (todoread all=true lists them)")
    if view.blocked:
        lines.append(f"Blocked: {len(view.blocked)} item(s) waiting on others.")
        stranded = [it for it in view.blocked if it.waits_on_cancelled]
        if stranded:
            lines.append(
                "Waits for a cancelled or dropped item (list a dropped one again, or remove or re-point"
                " the dependency):"
                if any(it.waits_on_dropped for it in stranded)
                else "Waits for a cancelled item (remove or re-point the dependency):"
            )
            lines += [_line(it) for it in stranded]
    if view.recent:
        lines.append("Recently completed:")
        lines += [_line(it) for it in view.recent[:recent]]
    if view.claimed:
        lines.append("Claimed completed, but the gate fails or never ran (not counted as completed):")
        lines += [_line(it) for it in view.claimed[:recent]]
    lines.append(
        "Keep this plan: continue from it, keep one item in progress, mark items done only with evidence."
    )
    text = "\n".join(lines) + "\n"
    return text if len(text) <= MAX_CHARS else text[: MAX_CHARS - 2] + "…\n"


def _dropped_line(it: ItemView) -> str:
    """Short: the id to revive it by, its text, who dropped it and when (its reason)."""
    why = f" ({clean(it.reason)})" if it.reason else ""
    return f"- [{clean(it.id)}] {clean(it.content)}{why}"


def _line(it: ItemView) -> str:
    extra = f" ({clean(it.evidence)})" if it.evidence and it.status == "completed" else ""
    tags = "".join(f" ({clean(t)})" for t in it.tags())
    return f"- [{clean(it.id)}] {clean(it.content)} [{it.priority}]{extra}{tags}"


def shown_ids(view: PlanView, *, recent: int = 5, ready: int = 5) -> list[str]:
    """The items the recovery text names: after a compaction they are all the
    writer knows of the plan (see `Ledger.recover_base`)."""
    shown = [
        *view.in_progress,
        *view.contested,
        *view.ready[:ready],
        *view.dropped[:DROPPED_SHOWN],
        *view.recent[:recent],
        *view.claimed[:recent],
    ]
    return list(dict.fromkeys(it.id for it in shown))
