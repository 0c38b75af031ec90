"""The recovery point: a short text an agent reads at the start of a session
or after compaction, so that it continues the plan instead of inventing one."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MAX_CHARS = 9_000  # Claude Code caps SessionStart context at 10,000 characters


def render_prime(view: dict[str, Any], *, recent: int = 5, ready: int = 5) -> str:
    items: list[dict[str, Any]] = view["items"]
    plan = view["plan"]
    if not items:
        return f"todoledger: plan {plan!r} is empty. Write your todo list as usual; it is recorded here.\n"
    counts: dict[str, int] = {}
    for it in items:
        counts[it["status"]] = counts.get(it["status"], 0) + 1
    summary = ", ".join(f"{n} {s}" for s, n in counts.items())
    lines = [f"todoledger plan {plan!r} (revision {view['revision']}): {summary}."]
    doing = [it for it in items if it["status"] == "in_progress"]
    if doing:
        lines.append("In progress:")
        lines += [_line(it) for it in doing]
    nxt = [it for it in items if it["ready"]]
    nxt.sort(key=lambda it: ({"high": 0, "medium": 1, "low": 2}[it["priority"]], it["position"]))
    if nxt:
        lines.append("Ready next:")
        lines += [_line(it) for it in nxt[:ready]]
    blocked = [it for it in items if it["blocked"] and it["status"] == "pending"]
    if blocked:
        lines.append(f"Blocked: {len(blocked)} item(s) waiting on others.")
    stranded = [it for it in items if it.get("waits_on_cancelled")]
    if stranded:
        lines.append("Waits for a cancelled item (remove or re-point the dependency):")
        lines += [f"{_line(it)} waits for {', '.join(it['waits_on_cancelled'])}" for it in stranded]
    done = sorted(
        (it for it in items if it["status"] == "completed"), key=lambda it: it["updated_at"], reverse=True
    )
    if done:
        lines.append("Recently completed:")
        lines += [_line(it) for it in done[:recent]]
    lines.append(
        "Keep this plan: continue from it, keep one item in progress, mark items done only with evidence."
    )
    text = "\n".join(lines) + "\n"
    return text if len(text) <= MAX_CHARS else text[: MAX_CHARS - 2] + "…\n"


def _line(it: dict[str, Any]) -> str:
    extra = f" ({it['evidence']})" if it.get("evidence") and it["status"] == "completed" else ""
    return f"- [{it['id']}] {it['content']} [{it['priority']}]{extra}"


def shown_ids(view: dict[str, Any], *, recent: int = 5, ready: int = 5) -> list[str]:
    """The items the recovery text names: after a compaction they are all the
    writer knows of the plan, so they become its base."""
    items: list[dict[str, Any]] = view["items"]
    nxt = sorted(
        (it for it in items if it["ready"]),
        key=lambda it: ({"high": 0, "medium": 1, "low": 2}[it["priority"]], it["position"]),
    )
    done = sorted(
        (it for it in items if it["status"] == "completed"), key=lambda it: it["updated_at"], reverse=True
    )
    doing = [it for it in items if it["status"] == "in_progress"]
    return list(dict.fromkeys(it["id"] for it in [*doing, *nxt[:ready], *done[:recent]]))
