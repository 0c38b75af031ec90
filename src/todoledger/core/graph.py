"""Dependencies and phases: cycles, and the derived `blocked` / `ready`.

`blocked` and `ready` are never stored: they follow from statuses, so they
can never disagree with them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from todoledger.core.model import OPEN_STATUSES, CycleError, Item


def find_path(start: str, goal: str, edges: Callable[[str], Iterable[str]]) -> list[str] | None:
    """A path start -> ... -> goal following `edges`, or None."""
    parents: dict[str, str | None] = {start: None}
    frontier = [start]
    while frontier:
        nxt: list[str] = []
        for node in frontier:
            for follower in edges(node):
                if follower in parents:
                    continue
                parents[follower] = node
                if follower == goal:
                    path = [goal]
                    back = parents[goal]
                    while back is not None:
                        path.append(back)
                        back = parents[back]
                    return path[::-1]
                nxt.append(follower)
        frontier = nxt
    return None


def check_new_dependency(item: str, blocker: str, depends_on: Callable[[str], Iterable[str]]) -> None:
    """Refuse `item waits for blocker` when blocker already waits for item."""
    if item == blocker:
        raise CycleError(f"dependency cycle: {item} cannot wait for itself")
    path = find_path(blocker, item, depends_on)
    if path is not None:
        cycle = " -> ".join([item, *path])
        raise CycleError(f"dependency cycle: {cycle} (each waits for the next)")


def check_new_parent(item: str, parent: str, parent_of: Callable[[str], str | None]) -> None:
    seen = [item]
    node: str | None = parent
    while node is not None:
        if node == item:
            raise CycleError(f"parent cycle: {' > '.join([*seen, item])}")
        seen.append(node)
        node = parent_of(node)


def derive(items: Sequence[Item], held: frozenset[str] = frozenset()) -> dict[str, tuple[bool, bool]]:
    """Map item id -> (blocked, ready) for a whole plan.

    Blocked: an unfinished dependency, directly or through a parent phase.
    Ready: pending, not blocked, and no unfinished children (a phase is done
    through its children, so it is not itself the next thing to do).
    `held`: items that count as unfinished whatever their status (checked but
    not verified, from `core.verification.held`).
    """
    by_id: Mapping[str, Item] = {i.id: i for i in items}
    open_children: set[str] = {i.parent for i in items if i.parent and i.status in OPEN_STATUSES}
    direct = {
        i.id: any(b in by_id and (by_id[b].status in OPEN_STATUSES or b in held) for b in i.depends_on)
        for i in items
    }
    memo: dict[str, bool] = {}

    def blocked(item_id: str, depth: int = 0) -> bool:
        if item_id in memo:
            return memo[item_id]
        item = by_id[item_id]
        result = direct[item_id]
        if not result and item.parent is not None and item.parent in by_id and depth < 64:
            result = blocked(item.parent, depth + 1)
        memo[item_id] = result
        return result

    out: dict[str, tuple[bool, bool]] = {}
    for i in items:
        b = blocked(i.id)
        out[i.id] = (b, i.status == "pending" and not b and i.id not in open_children)
    return out
