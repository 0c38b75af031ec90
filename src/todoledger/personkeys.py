"""Person keys on the person's own machine: an Ed25519 key pair whose private
half is encrypted with a passphrase only the person knows, the passphrase typed
at their terminal, and the last chain head each key signed in each ledger.

A key file lives in the person's config folder (`${XDG_CONFIG_HOME:-~/.config}/
todoledger/keys/NAME.key`, mode 0600): JSON with the public key, the KDF and its
parameters (scrypt, n=2^15, r=8, p=1, a random salt) and the private key sealed
with AES-256-GCM under the key the KDF derives. Reading the file gives nothing
to sign with; the passphrase is asked on `/dev/tty` (never the environment or the
arguments), or read from a file descriptor the caller hands over
(`--passphrase-fd N`, for scripts and tests).

`heads.json` beside the keys remembers, for each ledger and key, the event
(number and chain value) of the last signature made: every signed action checks
that the ledger still holds it, so a ledger rolled back or replaced is refused.

`cryptography` is imported only inside these functions: nothing on the agents'
paths (hooks, `show --json`, the lean verbs) loads it (tests/test_lean_imports.py).
"""

from __future__ import annotations

import base64
import json
import os

from todoledger.core.model import LedgerError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# The KDF and what it costs: n = 2^15 (32 MiB of memory, r=8), one lane.
KDF = {"name": "scrypt", "n": 2**15, "r": 8, "p": 1}
PASSPHRASE_FD_HELP = (
    "Read the passphrase from file descriptor N (one line; for `person init` a second line: the"
    " ledger's name when it asks) instead of the terminal: whoever can write to that descriptor"
    " hands over the passphrase of your key, so use it only from scripts you trust."
)
MIN_PASSPHRASE = 8


def key_dir() -> str:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "todoledger", "keys")


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def unb64(text: str) -> bytes:
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError):
        raise LedgerError("a key or signature is not base64") from None


def key_id(public: str) -> str:
    """A key's short name: the first 16 hex digits of the SHA-256 of its public key."""
    import hashlib

    return hashlib.sha256(unb64(public)).hexdigest()[:16]


class Signer:
    """A person's unlocked key, in memory only for the command that asked for it."""

    def __init__(self, name: str, private: Any, route: str = "cli") -> None:
        from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

        self.name = name
        self._private = private
        self.public = b64(private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw))
        self.id = key_id(self.public)
        self.route = route  # how the person's writes are named: `cli:<name>`, `web:<name>`

    @property
    def writer(self) -> str:
        return f"{self.route}:{self.name}"

    def sign(self, message: bytes) -> str:
        return b64(self._private.sign(message))


def verify(public: str, signature: str, message: bytes) -> bool:
    """Does `signature` by the key `public` cover `message`?"""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        Ed25519PublicKey.from_public_bytes(unb64(public)).verify(unb64(signature), message)
    except (InvalidSignature, ValueError, LedgerError):
        return False
    return True


def _derive(passphrase: str, salt: bytes, kdf: dict[str, Any]) -> bytes:
    from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

    if kdf.get("name") != "scrypt":
        raise LedgerError(f"key file uses KDF {kdf.get('name')!r}; this version reads scrypt")
    return Scrypt(salt=salt, length=32, n=int(kdf["n"]), r=int(kdf["r"]), p=int(kdf["p"])).derive(
        passphrase.encode("utf-8")
    )


def check_name(name: str) -> str:
    if not name or len(name) > 64 or not all(c.isalnum() or c in "-_." for c in name) or name[0] == ".":
        raise LedgerError(f"person name {name!r}: letters, digits, - _ . only (at most 64): nothing was done")
    return name


def key_path(name: str) -> str:
    return os.path.join(key_dir(), f"{check_name(name)}.key")


def make_key(name: str, passphrase: str) -> Signer:
    """A new key pair for `name`, its private half sealed with the passphrase, in
    a file of mode 0600 that must not exist yet. Returns the unlocked key."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat

    if len(passphrase) < MIN_PASSPHRASE:
        raise LedgerError(f"a passphrase has at least {MIN_PASSPHRASE} characters: nothing was done")
    path = key_path(name)
    private = Ed25519PrivateKey.generate()
    salt, nonce = os.urandom(16), os.urandom(12)
    sealed = AESGCM(_derive(passphrase, salt, KDF)).encrypt(
        nonce, private.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption()), name.encode()
    )
    signer = Signer(name, private)
    record = {
        "todoledger_person_key": 1,
        "name": name,
        "public": signer.public,
        "kdf": KDF | {"salt": b64(salt)},
        "cipher": "aes-256-gcm",
        "nonce": b64(nonce),
        "sealed": b64(sealed),
    }
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise LedgerError(
            f"{path} exists already: `todoledger person init` uses it (nothing was done)"
        ) from None
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(record, fh, indent=1)
    return signer


def read_key(name: str) -> dict[str, Any] | None:
    """The key file of `name` (no secret in the clear), or None."""
    path = key_path(name)
    try:
        with open(path, encoding="utf-8") as fh:
            data: dict[str, Any] = json.load(fh)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise LedgerError(f"{path}: cannot be read as a todoledger key ({exc})") from None
    return data


def local_keys() -> list[dict[str, Any]]:
    """Every key file in the person's key folder."""
    try:
        names = sorted(n[:-4] for n in os.listdir(key_dir()) if n.endswith(".key"))
    except OSError:
        return []
    out = []
    for name in names:
        try:
            data = read_key(name)
        except LedgerError:
            continue
        if data is not None:
            out.append(data)
    return out


def unlock(data: dict[str, Any], passphrase: str, route: str = "cli") -> Signer:
    """The key of a key file, opened with the passphrase; a wrong one is refused."""
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    name = str(data.get("name", ""))
    try:
        kdf = dict(data["kdf"])
        raw = AESGCM(_derive(passphrase, unb64(kdf["salt"]), kdf)).decrypt(
            unb64(data["nonce"]), unb64(data["sealed"]), name.encode()
        )
    except InvalidTag:
        raise LedgerError(f"wrong passphrase for {name}'s key: nothing was done") from None
    except (KeyError, TypeError, ValueError):
        raise LedgerError(f"{name}'s key file is damaged: nothing was done") from None
    signer = Signer(name, Ed25519PrivateKey.from_private_bytes(raw), route)
    if signer.public != data.get("public"):
        raise LedgerError(f"{name}'s key file does not match its public key: nothing was done")
    return signer


def read_passphrase(fd: int | None, prompt: str, *, lines: int = 1) -> list[str]:
    """`lines` lines the person types: from descriptor `fd` when given, else on
    /dev/tty with echo off (the first line) . Never the environment, never stdin:
    an agent's pipe is not the person's keyboard."""
    if fd is not None:
        try:
            with os.fdopen(os.dup(fd), "r", encoding="utf-8") as fh:
                got = [fh.readline().rstrip("\r\n") for _ in range(lines)]
        except OSError as exc:
            raise LedgerError(
                f"--passphrase-fd {fd}: cannot be read ({exc.strerror}): nothing was done"
            ) from None
        if not got[0]:
            raise LedgerError(f"--passphrase-fd {fd}: no passphrase on it: nothing was done")
        return got
    return _from_tty(prompt, lines)


def _from_tty(prompt: str, lines: int) -> list[str]:
    try:
        fd = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY)
    except OSError:
        raise LedgerError(
            "a signed action asks the passphrase at the person's terminal (/dev/tty), and this process has"
            " none (a script passes it with --passphrase-fd N): nothing was done"
        ) from None
    import termios

    out: list[str] = []
    try:
        for n in range(lines):
            os.write(fd, (prompt if n == 0 else "the ledger's name (as shown above): ").encode())
            old = None
            if n == 0:
                try:
                    old = termios.tcgetattr(fd)
                    quiet = termios.tcgetattr(fd)
                    quiet[3] &= ~termios.ECHO
                    termios.tcsetattr(fd, termios.TCSAFLUSH, quiet)
                except termios.error:
                    old = None
            try:
                line = _read_line(fd)
            finally:
                if old is not None:
                    termios.tcsetattr(fd, termios.TCSAFLUSH, old)
                    os.write(fd, b"\n")
            if line is None:
                raise LedgerError("no passphrase was typed at the terminal: nothing was done")
            out.append(line)
    finally:
        os.close(fd)
    if not out[0]:
        raise LedgerError("no passphrase was typed at the terminal: nothing was done")
    return out


TTY_WAIT_SECONDS = 120  # nobody typing: refused, not a command that hangs for ever


def _read_line(fd: int) -> str | None:
    """One line from the terminal (None at its end, or after TTY_WAIT_SECONDS without a key)."""
    import select

    got = b""
    while not got.endswith(b"\n"):
        if not select.select([fd], [], [], TTY_WAIT_SECONDS)[0]:
            return None
        chunk = os.read(fd, 1)
        if not chunk or chunk == b"\x04":
            return None if not got else got.decode("utf-8", "replace")
        got += chunk
    return got.decode("utf-8", "replace").rstrip("\r\n")


# heads -----------------------------------------------------------------------
def _heads_path() -> str:
    return os.path.join(key_dir(), "heads.json")


def heads() -> dict[str, Any]:
    try:
        with open(_heads_path(), encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def head_of(ledger: str, key: str) -> tuple[int, str] | None:
    """The event (number, chain value) of the last signature `key` made in `ledger`."""
    entry = heads().get(ledger, {}).get(key)
    if isinstance(entry, list) and len(entry) == 2:
        return int(entry[0]), str(entry[1])
    return None


def remember_head(ledger: str, key: str, seq: int, chain: str) -> None:
    data = heads()
    data.setdefault(ledger, {})[key] = [seq, chain]
    path = _heads_path()
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    tmp = f"{path}.{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=1)
    os.replace(tmp, path)


def unlock_named(name: str, passphrase: str, route: str) -> Signer:
    """The key of `name` in this user's key folder, opened with the passphrase
    (the board: a `serve` the person runs decrypts it in memory for one signature)."""
    data = read_key(name)
    if data is None:
        raise LedgerError(f"this server holds no key of {name} ({key_dir()}): nothing was done")
    return unlock(data, passphrase, route)


def export_line(data: dict[str, Any]) -> str:
    """What `person export` prints and `person add` reads: the name and the public key."""
    return f"todoledger-person-key {data['name']} {data['public']}"


def parse_export(text: str) -> tuple[str, str]:
    parts = text.split()
    if len(parts) != 3 or parts[0] != "todoledger-person-key":
        raise LedgerError(
            "not a `todoledger person export` line (todoledger-person-key NAME KEY): nothing was done"
        )
    name, public = check_name(parts[1]), parts[2]
    if len(unb64(public)) != 32:
        raise LedgerError("the key in that line is not an Ed25519 public key: nothing was done")
    return name, public
