"""Dependencies and phases: cycles, and the derived `blocked` / `ready`.

`blocked` and `ready` are never stored: they follow from statuses, so they
can never disagree with them.
"""

from __future__ import annotations

from todoledger.core.model import OPEN_STATUSES, UNDONE_STATUSES, CycleError, Item

TYPE_CHECKING = False  # `collections.abc` costs the agents' verbs start-up: the checker's only
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping, Sequence

    # An item's links as `derive_links` and `cancelled_links` read them: (id, parent, status, depends_on).
    Links = tuple[str, str | None, str, Sequence[str]]
    # One fact of an item for `check_waits`: (item, True) is "item is done", (item, False) "item can start".
    Node = tuple[str, bool]


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


def check_waits(
    item: str,
    blockers: Callable[[str], Iterable[str]],
    parent_of: Callable[[str], str | None],
    children: Callable[[str], Iterable[str]],
    *,
    start_only: bool = False,
) -> None:
    """Refuse links of `item` (already written, in the open transaction) that
    make a plan wait for itself through phases as well as dependencies.

    Two facts per item: it can *start* once its prerequisites are done and its
    parent phase can start (`derive`: blocked through a parent), and it is
    *done* only once it started and its sub-items are done (`open_below`).
    `add C --parent P --depends-on P` links start(C) -> done(P) -> done(C) ->
    start(C): a deadlock that a check of dependencies alone never sees, as
    is P waiting for its own sub-item. Every new link touches `item`'s two
    facts, so a search from each back to itself finds any cycle it closed
    (`start_only`: the new links are only its dependencies, which leave from its start)."""

    def edges(node: Node) -> Iterable[Node]:
        name, done = node
        if done:
            yield (name, False)
            yield from ((child, True) for child in children(name))
        else:
            yield from ((blocker, True) for blocker in blockers(name))
            parent = parent_of(name)
            if parent is not None:
                yield (parent, False)

    for start in ((item, False),) if start_only else ((item, False), (item, True)):
        path = _back_to(start, edges)
        if path is not None:
            raise CycleError(f"dependency cycle: {_words(path)}, so none of them can ever start")


def check_plan_waits(items: Sequence[Links]) -> None:
    """`check_waits` for a whole plan at once, in memory (an import sets many
    items' links): a cycle of the facts is found by peeling off, in turn, every
    fact that waits for nothing left (Kahn's algorithm); what cannot be peeled waits for itself."""
    parent_of = {i[0]: i[1] for i in items}
    children: dict[str, list[str]] = {}
    for item_id, parent, _status, _deps in items:
        if parent is not None:
            children.setdefault(parent, []).append(item_id)
    deps = {i[0]: [b for b in i[3] if b in parent_of] for i in items}

    def edges(node: Node) -> Iterable[Node]:
        name, done = node
        if done:
            return [(name, False), *((c, True) for c in children.get(name, ()))]
        parent = parent_of.get(name)
        return [*((b, True) for b in deps[name]), *([(parent, False)] if parent in parent_of else [])]

    nodes = [(i[0], done) for i in items for done in (False, True)]
    waiting_on: dict[Node, int] = dict.fromkeys(nodes, 0)
    waited_by: dict[Node, list[Node]] = {}
    for node in nodes:
        for follower in edges(node):
            waiting_on[node] += 1
            waited_by.setdefault(follower, []).append(node)
    free = [n for n in nodes if waiting_on[n] == 0]
    while free:
        for node in waited_by.get(free.pop(), ()):
            waiting_on[node] -= 1
            if waiting_on[node] == 0:
                free.append(node)
    stuck = [n for n in nodes if waiting_on[n] > 0]
    if stuck:
        path = _back_to(_on_cycle(stuck[0], edges, waiting_on), edges)
        if path is not None:
            raise CycleError(f"dependency cycle: {_words(path)}, so none of them can ever start")


def _on_cycle(node: Node, edges: Callable[[Node], Iterable[Node]], waiting_on: dict[Node, int]) -> Node:
    """A fact on a cycle, from one that waits for it: follow unpeeled facts until one repeats."""
    seen: set[Node] = set()
    while node not in seen:
        seen.add(node)
        node = next(f for f in edges(node) if waiting_on.get(f, 0) > 0)
    return node


def _back_to(start: Node, edges: Callable[[Node], Iterable[Node]]) -> list[Node] | None:
    """A path from `start` through `edges` back to `start` (iterative: plans run deep), or None."""
    came: dict[Node, Node] = {}
    frontier = [start]
    while frontier:
        nxt: list[Node] = []
        for node in frontier:
            for follower in edges(node):
                if follower == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came[path[-1]])
                    return [*path[::-1], start]
                if follower not in came:
                    came[follower] = node
                    nxt.append(follower)
        frontier = nxt
    return None


def _words(path: list[Node]) -> str:
    """The cycle as a person reads it: `C waits for P, P is done only with its sub-item C`."""
    from itertools import pairwise  # only on a refusal

    said: list[str] = []
    for (a, a_done), (b, b_done) in pairwise(path):
        if a_done and b_done:
            said.append(f"{a} is done only when its sub-item {b} is")
        elif not a_done and b_done:
            said.append(f"{a} waits for {b}")
        elif not a_done and not b_done:
            said.append(f"{a} starts only when its phase {b} can")
    return ", ".join(said)


def unmet(blocker: Item) -> bool:
    """A prerequisite holds only once completed: a cancelled one did not
    happen, so what waits for it waits until someone re-points the link."""
    return unmet_status(blocker.status)


def unmet_status(status: str) -> bool:
    return status != "completed"


def derive(items: Sequence[Item], gated: frozenset[str] = frozenset()) -> dict[str, tuple[bool, bool]]:
    """Map item id -> (blocked, ready) for a whole plan.

    Blocked: an unmet dependency (open, cancelled, or completed above open
    sub-items), directly or through a parent phase. Ready: pending, not
    blocked, and no unfinished sub-items (a phase is done through its
    children, so it is not itself the next thing).
    `gated`: items that count as unmet whatever their status (checked but
    not verified, from `core.verification.gated`).
    """
    return derive_links([(i.id, i.parent, i.status, i.depends_on) for i in items], gated)


def open_below(items: Sequence[Links]) -> set[str]:
    """Items with an open item somewhere below them (a child, a grandchild...):
    a phase is done through its children, so one marked completed above open
    work is not finished, and what waits for it is not ready."""
    parent_of = {i[0]: i[1] for i in items}
    out: set[str] = set()
    for _id, parent, status, _deps in items:
        if status not in OPEN_STATUSES:
            continue
        node, depth = parent, 0
        while node is not None and node not in out and depth < 64:
            out.add(node)
            node, depth = parent_of.get(node), depth + 1
    return out


def derive_links(items: Sequence[Links], gated: frozenset[str] = frozenset()) -> dict[str, tuple[bool, bool]]:
    """`derive` over bare links: `Ledger.show` builds no `Item` only to read these four fields."""
    by_id: Mapping[str, Links] = {i[0]: i for i in items}
    open_children = open_below(items)
    unmet_ids = gated | open_children
    direct = {
        i[0]: any(b in by_id and (unmet_status(by_id[b][2]) or b in unmet_ids) for b in i[3]) for i in items
    }
    memo: dict[str, bool] = {}

    def blocked(item_id: str, depth: int = 0) -> bool:
        if item_id in memo:
            return memo[item_id]
        parent = by_id[item_id][1]
        result = direct[item_id]
        if not result and parent is not None and parent in by_id and depth < 64:
            result = blocked(parent, depth + 1)
        memo[item_id] = result
        return result

    out: dict[str, tuple[bool, bool]] = {}
    for item_id, _, status, _ in items:
        b = blocked(item_id)
        out[item_id] = (b, status == "pending" and not b and item_id not in open_children)
    return out


def cancelled_blockers(items: Sequence[Item]) -> dict[str, list[str]]:
    """Items that wait for a cancelled or dropped item, and which: shown until
    someone lists it again, removes or re-points the dependency."""
    return cancelled_links([(i.id, i.parent, i.status, i.depends_on) for i in items])


def cancelled_links(items: Sequence[Links]) -> dict[str, list[str]]:
    """`cancelled_blockers` over bare links."""
    cancelled = {i[0] for i in items if i[2] in UNDONE_STATUSES}
    out: dict[str, list[str]] = {}
    for item_id, _, status, depends_on in items:
        gone = [b for b in depends_on if b in cancelled]
        if gone and status in OPEN_STATUSES:
            out[item_id] = gone
    return out
