"""A person's signature from the command line: which of the person's keys signs,
and its passphrase, asked on /dev/tty only when the ledger needs a signature
(a signed ledger, a person-only action), or read from `--passphrase-fd N`.

No click, no `cryptography` at import: the lean verbs hand the ledger `unlocker`
and nothing is loaded until a signature is asked for."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from todoledger.personkeys import Signer

# The descriptor `--passphrase-fd` named for this command (None: ask on /dev/tty).
PASSPHRASE_FD: list[int | None] = [None]


def unlocker(route: str = "cli") -> Callable[[set[str]], Signer]:
    """What the ledger calls when it needs a person's signature: it picks the
    person's local key that the ledger registered and asks its passphrase."""

    def unlock(registered: set[str]) -> Signer:
        return unlock_registered(registered, route)

    return unlock


def unlock_registered(registered: set[str], route: str = "cli", name: str | None = None) -> Signer:
    from todoledger.core.model import LedgerError
    from todoledger.personkeys import key_dir, key_id, local_keys, read_passphrase, unlock

    keys = [k for k in local_keys() if key_id(str(k.get("public"))) in registered or not registered]
    if name is not None:
        keys = [k for k in keys if k.get("name") == name]
    if not keys:
        raise LedgerError(
            f"this action needs the signature of a person key this ledger registered, and {key_dir()} holds"
            " none of them (a person signs at their own terminal, as the user whose key it is): nothing was done"
        )
    data = keys[0]
    line = read_passphrase(PASSPHRASE_FD[0], f"passphrase of {data['name']}'s todoledger key: ")[0]
    return unlock(data, line, route)
