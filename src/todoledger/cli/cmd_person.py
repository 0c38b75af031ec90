"""`todoledger person init|export|add|remove|reset|list`: a person's signing key
and the keys a ledger registers (see `todoledger.personkeys`, `ledger.signed`)."""

from __future__ import annotations

import os
import sys

import click

from todoledger.cli.main import emit, ledger, passphrase_option, say
from todoledger.core.model import LedgerError


@click.group("person")
def person() -> None:
    """Person keys: a person's word on a signed ledger is a signature only they can make."""


def _ledger_name(lg_location: str, typed: str) -> None:
    wanted = {lg_location, os.path.basename(lg_location)}
    if typed.strip() not in wanted:
        raise LedgerError(
            f"the ledger's name was not typed as shown ({os.path.basename(lg_location)}): nothing was done"
        )


@person.command("init")
@click.argument("name", required=False)
@passphrase_option
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def init(name: str | None, as_json: bool) -> None:
    """Make your key (Ed25519, sealed with a passphrase you type) and register it as this
    ledger's first person key: from then on every person-only action needs your signature."""
    from todoledger.cli.signing import PASSPHRASE_FD
    from todoledger.identity import os_user
    from todoledger.personkeys import make_key, read_key, read_passphrase, unlock

    name = name or os_user() or "person"
    with ledger() as lg:
        signed = lg.exists and lg.signed()
        if signed:  # the key is made (or kept) here; a registered key signs it in
            _key_only(name)
            return
        lg.first_key_writer()  # a person's route, before a passphrase is asked or a key made
        history = lg.exists and lg.agent_history()
        fd = PASSPHRASE_FD[0]
        if history:
            click.echo(
                f"{lg.location} has agents' history: a key registered now signs for a ledger agents"
                " already wrote to. Type the ledger's name to go on.",
                err=True,
            )
        existing = read_key(name)
        prompt = f"passphrase for {name}'s todoledger key" + (" (existing key)" if existing else "") + ": "
        lines = read_passphrase(fd, prompt, lines=2 if history else 1)
        if history:
            _ledger_name(lg.location, lines[1])
        if existing is None and fd is None:
            again = read_passphrase(None, "the same passphrase again: ")[0]
            if again != lines[0]:
                raise LedgerError("the two passphrases differ: nothing was done")
        signer = unlock(existing, lines[0]) if existing is not None else make_key(name, lines[0])
        lg.sign_with(signer)
        record = lg.person_init(signer, route="terminal" if fd is None else "script (--passphrase-fd)")
        line = lg.people()["line"]
    if as_json:
        emit(record | {"people": line})
        return
    say(f"person key {record['id']} for {name} registered (trust on first use): this ledger is signed")
    say(line)


def _key_only(name: str) -> None:
    from todoledger.cli.signing import PASSPHRASE_FD
    from todoledger.personkeys import export_line, make_key, read_key, read_passphrase

    data = read_key(name)
    if data is None:
        line = read_passphrase(PASSPHRASE_FD[0], f"passphrase for {name}'s new todoledger key: ")[0]
        if PASSPHRASE_FD[0] is None and read_passphrase(None, "the same passphrase again: ")[0] != line:
            raise LedgerError("the two passphrases differ: nothing was done")
        make_key(name, line)
        data = read_key(name)
        assert data is not None
    say(
        f"this ledger has person keys already: {name}'s key is not registered in it. A registered person"
        " signs it in with `todoledger person add` and this line:"
    )
    click.echo(export_line(data))


@person.command("export")
@click.argument("name", required=False)
def export(name: str | None) -> None:
    """Print your public key as one line, for `todoledger person add` on a ledger that has keys."""
    from todoledger.identity import os_user
    from todoledger.personkeys import export_line, read_key

    name = name or os_user() or "person"
    data = read_key(name)
    if data is None:
        raise LedgerError(f"no key for {name} here: `todoledger person init {name}` makes one")
    click.echo(export_line(data))


@person.command("add")
@click.argument("line", nargs=-1, required=True)
@passphrase_option
def add(line: tuple[str, ...]) -> None:
    """Sign another person's key in (LINE: what `todoledger person export` printed), with your key."""
    from todoledger.personkeys import parse_export

    name, public = parse_export(" ".join(line))
    with ledger() as lg:
        record = lg.person_add(name, public)
    signer = lg.signer()
    say(f"person key {record['id']} for {name} registered, signed by {signer.name if signer else '?'}")


@person.command("remove")
@click.argument("ref")
@passphrase_option
def remove(ref: str) -> None:
    """Remove a person key (its id or its holder's name), signed with your key."""
    with ledger() as lg:
        record = lg.person_remove(ref)
    say(f"person key {record['id']} of {record['name']} removed")


@person.command("reset")
@passphrase_option
def reset() -> None:
    """A lost passphrase: remove every person key of this ledger, unsigned. Only at a terminal,
    by the OS user who owns the ledger file; every header flags it for seven days."""
    from todoledger.cli.signing import PASSPHRASE_FD
    from todoledger.identity import at_terminal, local_writer
    from todoledger.personkeys import read_passphrase

    writer = local_writer()
    if not at_terminal() or not writer.startswith("cli:"):
        raise LedgerError(f"person reset is run at a person's terminal, not by {writer}: nothing was done")
    with ledger() as lg:
        where = lg.location
        if "://" in where or not os.path.exists(where):
            raise LedgerError("person reset works on a ledger file (on a server, its owner removes the keys)")
        if os.stat(where).st_uid != os.getuid():
            raise LedgerError(f"{where} is not owned by this user: only its owner resets its keys")
        click.echo(
            f"type the ledger's name ({os.path.basename(where)}) to remove every person key:", err=True
        )
        typed = read_passphrase(PASSPHRASE_FD[0], "the ledger's name: ")[0]
        _ledger_name(where, typed)
        record = lg.person_reset(writer)
        line = lg.people()["line"]
    say(f"removed {len(record['keys'])} person keys: this ledger is unsigned until `todoledger person init`")
    say(line)


@person.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def listing(as_json: bool) -> None:
    """The person keys this ledger registered (and a recent reset)."""
    from todoledger.cli.main import reader

    with reader() as lg:
        people = lg.people()
    if as_json:
        emit(people)
        return
    say(people["line"])
    sys.exit(0)
