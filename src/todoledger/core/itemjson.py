"""The JSON text of `Ledger.show` written straight from the database's rows.

`show --json` is what an agent calls most, and on a plan of 1,000 items
building 22,000 dict entries only for the JSON encoder to walk them again
cost more than the rest of the command. `plan_text` writes the same text
from the rows: byte for byte `jsontext.compact(Ledger.show(...))` (same keys,
same order, same escapes: tests/test_itemjson.py checks it on plans with
every kind of field). Strings go through the encoder `json.dumps` uses
for them (`_json.encode_basestring`); everything else through
`jsontext.compact`.
"""

from __future__ import annotations

from todoledger.core.jsontext import compact
from todoledger.core.model import STATE_FIELDS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any

try:
    from _json import encode_basestring as _string
except ImportError:  # no C accelerator
    _string = compact

# The keys of an item in `Ledger.show`, in their order: `Item.as_dict`'s, then the derived six.
ITEM_KEYS = (
    "id",
    *STATE_FIELDS,
    *("created_by", "updated_by", "created_at", "updated_at"),
    *("blocked", "ready", "waits_on_cancelled", "verification", "forced", "contested"),
)


def plan_text(
    plan: str,
    revision: int,
    rows: Sequence[Sequence[Any]],
    deps: Mapping[str, list[str]],
    derived: Mapping[str, tuple[bool, bool]],
    waiting: Mapping[str, list[str]],
    verified: Mapping[str, str | None],
    forced: Mapping[str, list[Any]],
    contested: Mapping[str, list[dict[str, str]]],
    decode: Callable[[str], Any],
) -> str:
    """`rows` in `store.repo.ITEM_COLUMNS` order (id, plan, content, status,
    priority, active_form, parent, position, evidence, reason, notes,
    created_by, updated_by, created_at, updated_at, estimate, uses,
    needs_approval); `decode` reads the stored `uses`."""
    s = _string

    def n(value: Any) -> str:  # a text column that may be NULL
        return "null" if value is None else s(value) if type(value) is str else compact(value)

    items: list[str] = []
    add = items.append
    for r in rows:
        item_id = r[0]
        blocked, ready = derived[item_id]
        blockers = deps.get(item_id)
        uses = r[16]
        position = r[7]  # a finite float's repr is what the encoder writes
        place = repr(position) if type(position) is float and position - position == 0 else compact(position)
        add(
            f'{{"id":{n(item_id)},"content":{n(r[2])},"status":{n(r[3])},"priority":{n(r[4])},'
            f'"active_form":{n(r[5])},"parent":{n(r[6])},'
            f'"position":{place},'
            f'"depends_on":{compact(blockers) if blockers else "[]"},'
            f'"evidence":{n(r[8])},"reason":{n(r[9])},"notes":{n(r[10])},"estimate":{n(r[15])},'
            f'"uses":{"[]" if uses is None else compact(decode(uses) or [])},'
            f'"needs_approval":{"true" if r[17] else "false"},'
            f'"created_by":{n(r[11])},"updated_by":{n(r[12])},"created_at":{n(r[13])},"updated_at":{n(r[14])},'
            f'"blocked":{"true" if blocked else "false"},"ready":{"true" if ready else "false"},'
            f'"waits_on_cancelled":{compact(waiting.get(item_id, []))},"verification":{n(verified[item_id])},'
            f'"forced":{compact(forced[item_id]) if item_id in forced else "[]"},'
            f'"contested":{compact(contested[item_id]) if item_id in contested else "[]"}}}'
        )
    return f'{{"plan":{s(plan)},"revision":{compact(revision)},"items":[{",".join(items)}]}}'
