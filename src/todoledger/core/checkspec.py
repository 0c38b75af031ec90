"""Check specs: what a check runs and what it must find, as validated data.

A spec is one line of text plus a few options, so that a person can read and
approve exactly what will run (`todoledger trust` shows both):

    cmd:COMMAND                 exit 0 holds (options: expect=REGEX on the output)
    http://... / https://...    a 2xx answer (options: status=CODE, expect=REGEX on the body)
    port:HOST:PORT              accepts a TCP connection (option closed: nothing accepts one,
                                what a sweep's clean check asks of a server's port)
    disk:PATH>=SIZE             at least SIZE free at PATH
    file:PATH                   exists (options: nonempty, newer = newer than the item's start)
    metric:NAME OP VALUE        a number recorded on the item; VALUE is a number or
                                `baseline*RATIO` (options: baseline=ITEM)

Sizes are binary, as `df -h` prints them: 1K = 1024 bytes, 5.4T = 5.4 x 1024**4;
a bare number is bytes. Every option may carry `timeout` (seconds, default 60),
`watch` (paths whose content decides when a receipt goes stale) and `max_age`
(seconds a passing receipt stands; liveness checks, http and port, default
to 10 minutes: a server that answered an hour ago proves nothing now).

`cannot_fail` lints a check that proves nothing (`true`, a bare `echo`, a
`file:` check of a file the item's own command writes): it is refused when
added, and does not count as proof where it exists.

Pure: no I/O. Bad specs raise one `LedgerError` line.
"""

from __future__ import annotations

from todoledger.core.digests import sha256 as _sha256
from todoledger.core.jsontext import encoder
from todoledger.core.model import LedgerError
from todoledger.core.record import dataclass, field

# Not `json`, `re` or `math` at import (each function that needs one imports it): a read of
# a gated plan (`show --json`, `next`, SessionStart) parses its checks, which needs none
# of them for most specs, and `json` with `re` cost more than the rest of that read
# (issue 30: bench/bench_hooks.py, tests/test_read_imports.py).

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, Protocol

    class Digest(Protocol):
        def update(self, data: bytes, /) -> None: ...
        def hexdigest(self) -> str: ...


KINDS: tuple[str, ...] = ("cmd", "http", "port", "disk", "file", "metric")
OPS: tuple[str, ...] = (">=", "<=", "==", ">", "<")  # two-character ops first: they are matched in order
DEFAULT_TIMEOUT = 60.0
MAX_TIMEOUT = 24 * 3600.0
MAX_AGE = 366 * 24 * 3600.0
MAX_SPEC_CHARS = 4_000
_UNITS = {"": 0, "K": 1, "M": 2, "G": 3, "T": 4, "P": 5, "E": 6}
# Patterns, not compiled ones: `re` compiles each on first use (and caches it),
# so a command that parses no size or metric pays nothing for them at start-up.
_SIZE = r"(?i)^\s*(\d+(?:\.\d+)?)\s*([KMGTPE]?)(?:i?B)?\s*$"
_METRIC_NAME = r"^[A-Za-z_][A-Za-z0-9_.]*$"
_NUMBER = r"^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$"
_BASELINE = r"^baseline(?:\s*\*\s*(" + _NUMBER[1:-1] + r"))?$"
_HOSTPORT = r"^(\[[0-9A-Fa-f:.]+\]|[^:/?#\[\]@\s]+)(?::(\d{1,5}))?$"
_OPTION_NAMES = (
    "expect",
    "status",
    "timeout",
    "nonempty",
    "newer",
    "watch",
    "baseline",
    "max_age",
    "closed",
    "accept",
)
# What a gate may accept below verified, for what waits on its item (`accept`).
ACCEPTS = ("cross-checked",)
LIVENESS_MAX_AGE = 600.0  # http and port receipts stand for 10 minutes unless the check says otherwise
LIVENESS_KINDS = ("http", "port")


@dataclass(frozen=True)
class Check:
    """A parsed, valid check. `target` is the command, URL, host:port, path or metric name."""

    kind: str
    target: str
    expect: str | None = None
    status: int | None = None
    timeout: float = DEFAULT_TIMEOUT
    min_bytes: int | None = None
    size: str | None = None  # the size as written (normalised), for display
    nonempty: bool = False
    newer: bool = False
    op: str | None = None
    value: float | None = None
    ratio: float | None = None  # `baseline*ratio`: compare against ratio x the baseline's value
    baseline: str | None = None
    watch: tuple[str, ...] = field(default_factory=tuple)
    max_age: float | None = None  # seconds a receipt stands (None: liveness default, else for ever)
    closed: bool = False  # port: holds when nothing accepts a connection (a sweep's clean check)
    # "cross-checked": what waits on the item may start on another agent's passing check
    # too (the item still reads cross-checked, never verified)
    accept: str | None = None

    @property
    def age_limit(self) -> float | None:
        """Seconds a passing receipt of this check stands before it is stale (None: until the tree changes)."""
        if self.max_age is not None:
            return self.max_age
        return LIVENESS_MAX_AGE if self.kind in LIVENESS_KINDS else None

    @property
    def host(self) -> str:
        return self.target.rsplit(":", 1)[0].strip("[]")

    @property
    def port(self) -> int:
        return int(self.target.rsplit(":", 1)[1])

    def text(self) -> str:
        """The spec line, such that `parse(text(), options())` gives this check back."""
        if self.kind == "http":
            return self.target
        if self.kind == "disk":
            return f"disk:{self.target}>={self.size}"
        if self.kind == "metric":
            if self.ratio is not None:
                threshold = "baseline" if self.ratio == 1.0 else f"baseline*{_num(self.ratio)}"
            else:
                assert self.value is not None
                threshold = _num(self.value)
            return f"metric:{self.target}{self.op}{threshold}"
        return f"{self.kind}:{self.target}"

    def options(self) -> dict[str, Any]:
        """The options that differ from the defaults, JSON-ready."""
        out: dict[str, Any] = {}
        if self.expect is not None:
            out["expect"] = self.expect
        if self.status is not None:
            out["status"] = self.status
        if self.timeout != DEFAULT_TIMEOUT:
            out["timeout"] = self.timeout
        if self.nonempty:
            out["nonempty"] = True
        if self.newer:
            out["newer"] = True
        if self.baseline is not None:
            out["baseline"] = self.baseline
        if self.watch:
            out["watch"] = list(self.watch)
        if self.max_age is not None:
            out["max_age"] = self.max_age
        if self.closed:
            out["closed"] = True
        if self.accept is not None:
            out["accept"] = self.accept
        return out

    def canonical(self) -> str:
        """The exact text a person approves: spec line and options."""
        return self.text() + "\n" + _OPTIONS_TEXT(self.options())

    def digest(self) -> str:
        return sha256(self.canonical().encode("utf-8")).hexdigest()

    def describe(self) -> str:
        """One line for people: the spec and its non-default options. A `port:`
        check says what it proves: that some process listens, whichever it is."""
        opts = {k: v for k, v in self.options().items() if k != "closed"}  # the head says so
        if self.kind == "port":
            head = (
                f"nothing listens on {self.target}" if self.closed else f"a process listens on {self.target}"
            )
        else:
            head = self.text()
        if not opts:
            return head
        return head + "  (" + ", ".join(f"{k}={v!r}" for k, v in sorted(opts.items())) + ")"

    @property
    def runs_code(self) -> bool:
        """Would running it execute something or reach the network (the reason for `trust`)?"""
        return self.kind in ("cmd", "http", "port")


# json.dumps(options, sort_keys=True, ensure_ascii=False), without importing json (core/jsontext.py)
_OPTIONS_TEXT = encoder(separators=(", ", ": "), sort_keys=True)


def _num(value: float) -> str:
    return repr(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)


def _bad(spec: str, why: str) -> LedgerError:
    shown = spec if len(spec) <= 60 else spec[:57] + "..."
    return LedgerError(f"bad check {shown!r}: {why}")


def sha256(data: bytes = b"") -> Digest:
    """hashlib.sha256 without hashlib (core/digests.py): importing it loads OpenSSL,
    which costs a gated `done` a good part of its start-up (see bench/bench_checks.py)."""
    found: Digest = _sha256(data)
    return found


def parse_size(text: str) -> int:
    """`5.4T` -> bytes (binary units, as `df -h`); raises ValueError."""
    import math
    import re

    m = re.match(_SIZE, text)
    if not m:
        raise ValueError(text)
    value: float = float(m.group(1)) * float(1024 ** _UNITS[m.group(2).upper()])
    if not math.isfinite(value) or value > 2**63:
        raise ValueError(text)
    return math.ceil(value)


def format_size(n: float) -> str:
    """Bytes in the largest binary unit, one decimal: 2.8T, 512M, 37."""
    for unit in ("E", "P", "T", "G", "M", "K"):
        scale = 1024 ** _UNITS[unit]
        if abs(n) >= scale:
            return f"{n / scale:.1f}{unit}"
    return f"{int(n)}"


def parse(spec: str, options: dict[str, Any] | None = None) -> Check:
    """Validate a spec line and its options; raises one clear LedgerError line."""
    if not isinstance(spec, str):
        raise LedgerError(f"a check spec must be text, not {type(spec).__name__}")
    text = spec.strip()
    if not text:
        raise LedgerError(
            "bad check '': empty spec (try cmd:COMMAND, http://..., port:HOST:PORT, disk:PATH>=SIZE)"
        )
    if len(text) > MAX_SPEC_CHARS:
        raise _bad(text, f"longer than {MAX_SPEC_CHARS} characters")
    if any(ch < " " or ch == "\x7f" for ch in text):
        raise _bad(text.encode("unicode_escape").decode("ascii"), "a spec is one line of printable text")
    opts = _options(text, options or {})
    lowered = text.lower()
    if lowered.startswith(("http://", "https://")):
        fields = _http(text)
    else:
        kind, sep, body = text.partition(":")
        if not sep or kind not in KINDS or kind == "http":
            raise _bad(text, "unknown kind; use one of cmd:, http(s)://, port:, disk:, file:, metric:")
        fields = {"cmd": _cmd, "port": _port, "disk": _disk, "file": _file, "metric": _metric}[kind](
            text, body
        )
    fields.update(opts)
    if fields.get("ratio") is not None and fields.get("baseline") is None:
        raise _bad(
            text, "a baseline threshold needs the baseline option (the item whose value is the baseline)"
        )
    if fields["kind"] not in ("cmd", "http") and fields.get("expect") is not None:
        raise _bad(text, "expect applies to cmd: and http checks only")
    if fields["kind"] != "http" and fields.get("status") is not None:
        raise _bad(text, "status applies to http checks only")
    if fields["kind"] != "file" and (fields.get("nonempty") or fields.get("newer")):
        raise _bad(text, "nonempty/newer apply to file: checks only")
    if fields["kind"] != "port" and fields.get("closed"):
        raise _bad(text, "closed applies to port: checks only")
    return Check(**fields)


def _options(text: str, options: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in options.items():
        if name not in _OPTION_NAMES:
            raise _bad(text, f"unknown option {name!r} (known: {', '.join(_OPTION_NAMES)})")
        if value is None:
            continue
        if name == "expect":
            import re  # only for a check that has an expect pattern

            if not isinstance(value, str) or not value:
                raise _bad(text, "expect must be a regular expression")
            try:
                re.compile(value)
            except re.error as exc:
                raise _bad(text, f"expect is not a valid regular expression ({exc})") from None
            out[name] = value
        elif name == "status":
            if isinstance(value, bool) or not isinstance(value, int) or not 100 <= value <= 599:
                raise _bad(text, f"status must be an HTTP status code (100-599), not {value!r}")
            out[name] = value
        elif name == "timeout":
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= MAX_TIMEOUT:
                raise _bad(text, f"timeout must be seconds between 0 and {MAX_TIMEOUT:g}, not {value!r}")
            out[name] = float(value)
        elif name in ("nonempty", "newer", "closed"):
            if not isinstance(value, bool):
                raise _bad(text, f"{name} is true or false, not {value!r}")
            out[name] = value
        elif name == "baseline":
            if not isinstance(value, str) or not value.strip():
                raise _bad(text, "baseline must be an item id")
            out[name] = value.strip()
        elif name == "accept":
            if value not in ACCEPTS:
                raise _bad(text, f"accept is {' or '.join(ACCEPTS)}, not {value!r}")
            out[name] = value
        elif name == "max_age":
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= MAX_AGE:
                raise _bad(text, f"max_age must be seconds between 0 and {MAX_AGE:g}, not {value!r}")
            out[name] = float(value)
        elif name == "watch":
            paths = [value] if isinstance(value, str) else value
            if not isinstance(paths, list | tuple) or not all(isinstance(p, str) and p for p in paths):
                raise _bad(text, "watch must be a list of paths")
            if paths:
                out[name] = tuple(dict.fromkeys(paths))
    return out


def _cmd(text: str, body: str) -> dict[str, Any]:
    if not body.strip():
        raise _bad(text, "empty command (write cmd:COMMAND, e.g. cmd:pytest -q)")
    return {"kind": "cmd", "target": body.strip()}


def _http(text: str) -> dict[str, Any]:
    import re

    scheme, _, rest = text.partition("://")
    host = rest.split("/", 1)[0].split("?", 1)[0]
    if not host or any(ch.isspace() for ch in text):
        raise _bad(text, "a URL needs a host and no spaces (e.g. http://127.0.0.1:30000/health)")
    m = re.match(_HOSTPORT, host)
    if not m:
        raise _bad(text, f"{host!r} is not a host[:port]")
    if m.group(2) is not None and not 0 < int(m.group(2)) < 65536:
        raise _bad(text, "the port must be a number from 1 to 65535")
    return {"kind": "http", "target": scheme.lower() + "://" + rest}


def _port(text: str, body: str) -> dict[str, Any]:
    host, sep, port = body.strip().rpartition(":")
    if not sep or not host.strip("[]") or not port.isdigit() or not 0 < int(port) < 65536:
        raise _bad(text, "write port:HOST:PORT with a port from 1 to 65535 (e.g. port:127.0.0.1:30000)")
    if any(ch.isspace() for ch in host):
        raise _bad(text, "the host has spaces")
    return {"kind": "port", "target": f"{host}:{int(port)}"}


def _disk(text: str, body: str) -> dict[str, Any]:
    import re

    path, sep, size = body.rpartition(">=")
    if not sep or not path.strip():
        raise _bad(text, "write disk:PATH>=SIZE (e.g. disk:/data>=5.4T)")
    try:
        n = parse_size(size)
    except ValueError:
        raise _bad(
            text, f"{size.strip()!r} is not a size (e.g. 5.4T, 200G, 512M, 1: binary units as df -h)"
        ) from None
    m = re.match(_SIZE, size)
    assert m is not None
    return {"kind": "disk", "target": path.strip(), "min_bytes": n, "size": m.group(1) + m.group(2).upper()}


def _file(text: str, body: str) -> dict[str, Any]:
    if not body.strip():
        raise _bad(text, "write file:PATH")
    return {"kind": "file", "target": body.strip()}


def _metric(text: str, body: str) -> dict[str, Any]:
    import math
    import re

    for op in OPS:
        name, sep, threshold = body.partition(op)
        if sep:
            break
    else:
        raise _bad(
            text, f"write metric:NAME OP VALUE with OP one of {', '.join(OPS)} (e.g. metric:tok_s>=82)"
        )
    name, threshold = name.strip(), threshold.strip()
    if not re.match(_METRIC_NAME, name):
        raise _bad(text, f"{name!r} is not a metric name (letters, digits, _ and .)")
    out: dict[str, Any] = {"kind": "metric", "target": name, "op": op}
    m = re.match(_BASELINE, threshold)
    if m:
        ratio = float(m.group(1)) if m.group(1) else 1.0
        if not math.isfinite(ratio):
            raise _bad(text, "the ratio must be a finite number")
        out["ratio"] = ratio
        return out
    if not re.match(_NUMBER, threshold) or not math.isfinite(float(threshold)):
        raise _bad(text, f"{threshold!r} is not a number or baseline*RATIO")
    out["value"] = float(threshold)
    return out


def parse_age(text: str) -> float:
    """`90`, `90s`, `10m`, `2h`, `1d` -> seconds; ValueError otherwise."""
    import re

    m = re.match(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$", text)
    if not m:
        raise ValueError(text)
    return float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]


# Commands whose exit status is 0 whatever happens: they prove nothing.
_NO_OPS = frozenset({"true", ":", "exit", "exit 0", "/bin/true", "/usr/bin/true", "exit 0;", "true;"})
_ALWAYS_ZERO_TAIL = r"(?:\|\||;)\s*(?:true|:|exit\s+0)\s*;?\s*$"
_SHELL_LOGIC = ("|", ">", "<", "&", ";", "`", "$(")


def cannot_fail(check: Check, siblings: Sequence[Check] = ()) -> str | None:
    """Why this check proves nothing (it passes whatever the work did), or None.
    `siblings` are the other checks of the same item: a `file:` check of a file
    the item's own command writes passes because that command ran, not because
    the work is done."""
    if check.kind == "cmd":
        cmd = " ".join(check.target.split())
        if cmd in _NO_OPS:
            return f"{cmd!r} always exits 0"
        word = cmd.split(" ", 1)[0]
        if word in ("echo", "printf") and not any(ch in cmd for ch in _SHELL_LOGIC):
            return f"a bare {word} always exits 0 and prints what it was told"
        if check.expect is None and _zero_tail(cmd):
            return "it ends in an exit status of 0 whatever ran before"
        return None
    if check.kind == "file":
        for other in siblings:
            if other.kind == "cmd" and writes_file(other.target, check.target):
                return f"the item's own check {other.text()} writes {check.target}"
    return None


def _zero_tail(cmd: str) -> bool:
    """`_ALWAYS_ZERO_TAIL` found in `cmd` (its whitespace already single spaces). `re` only
    where it could match (an `||` or `;`, and an end in true, : or 0): a read judges every
    gate, and `re`'s import costs more than that read (issue 30)."""
    if ("||" not in cmd and ";" not in cmd) or not cmd.rstrip().rstrip(";").rstrip().endswith(
        ("true", ":", "0")
    ):
        return False
    import re

    return bool(re.search(_ALWAYS_ZERO_TAIL, cmd))


def writes_file(command: str, path: str) -> bool:
    """Does this shell command (visibly) create or write `path`: a redirection into it, touch, tee, cp/mv to it?"""
    bare = path[2:] if path.startswith("./") else path
    if bare not in command:  # each pattern below names it: `re` only where one could match
        return False
    import re

    name = re.escape(bare)
    target = r"(?:\./)?" + name + r"(?=$|[\s;&|)])"
    return bool(
        re.search(r">>?\|?\s*['\"]?" + target, command)
        or re.search(r"\b(?:touch|tee(?:\s+-a)?|mkdir(?:\s+-p)?)\s+(?:[^;&|]*\s)?['\"]?" + target, command)
        or re.search(r"\b(?:cp|mv|install|ln(?:\s+-s)?)\s+[^;&|]*\s['\"]?" + target, command)
    )


def compare(value: float, op: str, threshold: float) -> bool:
    return {
        ">=": value >= threshold,
        ">": value > threshold,
        "<=": value <= threshold,
        "<": value < threshold,
        "==": value == threshold,
    }[op]
