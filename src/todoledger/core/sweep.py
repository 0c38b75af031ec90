"""Parameter sweeps: the definition, its combinations, metric capture and results.

Pure: no I/O. A sweep expands into one item per combination of its
parameters (plus the baseline combinations); each run of its command records
the metrics it prints, and the results summarise the repeats per combination.

A combination's lifecycle, when the sweep has one: `setup` (a command kept
running, e.g. a server started with the combination's flags), `ready` (a
check polled until it holds), `warmup` runs that are not counted, the
repeats, `teardown` (a command; the setup's process group is ended in any
case) and `clean` (a check that must hold after the teardown, or the sweep
stops). Every one of them is templated with the combination's parameters.

The order of the runs (`grouped`, `interleaved`, `shuffled` with a seed) is
`schedule`. A verdict is `inconclusive` when it rests on too few runs or on
numbers whose spread is larger than the difference they would decide on.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import re
import shlex

from todoledger.core.checkspec import MAX_TIMEOUT, Check, compare, parse
from todoledger.core.model import LedgerError
from todoledger.core.record import dataclass, field

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
MAX_COMBINATIONS = 1_000
MAX_REPEAT = 100
MAX_WARMUP = 100
WIDE_SPREAD = 0.10  # (max - min) / median above this is flagged
MIN_RUNS = 3  # fewer runs on either side of a verdict: inconclusive
ORDERS = ("grouped", "interleaved", "shuffled")
DEFAULT_READY_TIMEOUT = 600.0
READY_INTERVAL = 1.0  # seconds between two polls of the ready check (and of the clean check)
DEFAULT_CLEAN_TIMEOUT = 30.0  # seconds the clean check is polled after a teardown before the sweep stops
DEFAULT_TEARDOWN_TIMEOUT = 60.0  # seconds a teardown waits for the ready check's port to be free
LIFECYCLE = ("setup", "ready", "teardown", "clean")


@dataclass(frozen=True)
class Sweep:
    name: str
    template: str
    params: list[tuple[str, list[str]]]
    run: str
    metrics: list[tuple[str, str]]  # (name, REGEX with one group, or $.json.path)
    repeat: int = 1
    baseline: dict[str, str] = field(default_factory=dict)
    keep: str | None = None  # e.g. "tok_s>baseline*1.1"
    timeout: float = 3600.0
    setup: str | None = None  # a command kept running while the combination is measured
    ready: str | None = None  # a check spec polled until it holds
    ready_options: dict[str, Any] = field(default_factory=dict)
    ready_timeout: float = DEFAULT_READY_TIMEOUT
    teardown: str | None = None  # a command; the setup's process group is ended in any case
    clean: str | None = None  # a check spec that must hold after the teardown
    clean_options: dict[str, Any] = field(default_factory=dict)
    warmup: int = 0
    order: str = "grouped"
    seed: int = 0
    restarts: bool = False  # interleaved/shuffled with a setup: restarting it was asked for
    watch: list[str] = field(default_factory=list)
    clean_timeout: float = DEFAULT_CLEAN_TIMEOUT
    teardown_timeout: float = DEFAULT_TEARDOWN_TIMEOUT

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "template": self.template,
            "params": [[n, list(v)] for n, v in self.params],
            "run": self.run,
            "metrics": [[n, e] for n, e in self.metrics],
            "repeat": self.repeat,
            "baseline": dict(self.baseline),
            "keep": self.keep,
            "timeout": self.timeout,
        }
        # The lifecycle's keys only where set: a definition without one reads as before.
        extra: dict[str, Any] = {
            "setup": self.setup,
            "ready": self.ready,
            "ready_options": dict(self.ready_options) or None,
            "ready_timeout": self.ready_timeout if self.ready else None,
            "teardown": self.teardown,
            "clean": self.clean,
            "clean_options": dict(self.clean_options) or None,
            "warmup": self.warmup or None,
            "order": self.order if self.order != "grouped" else None,
            "seed": self.seed if self.order == "shuffled" else None,
            "restarts": self.restarts or None,
            "watch": list(self.watch) or None,
            # Only where not the default: a definition approved before these existed keeps its digest.
            "clean_timeout": self.clean_timeout if self.clean_timeout != DEFAULT_CLEAN_TIMEOUT else None,
            "teardown_timeout": (
                self.teardown_timeout if self.teardown_timeout != DEFAULT_TEARDOWN_TIMEOUT else None
            ),
        }
        out.update({k: v for k, v in extra.items() if v is not None})
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Sweep:
        return define(
            d["name"],
            template=d["template"],
            params=[f"{n}={','.join(v)}" for n, v in d["params"]],
            run=d["run"],
            metrics=[f"{n}={e}" for n, e in d["metrics"]],
            repeat=d["repeat"],
            baseline=[f"{k}={v}" for k, v in d["baseline"].items()],
            keep=d["keep"],
            timeout=d.get("timeout", 3600.0),
            setup=d.get("setup"),
            ready=d.get("ready"),
            ready_options=d.get("ready_options"),
            ready_timeout=d.get("ready_timeout") or DEFAULT_READY_TIMEOUT,
            teardown=d.get("teardown"),
            clean=d.get("clean"),
            clean_options=d.get("clean_options"),
            warmup=d.get("warmup") or 0,
            order=d.get("order") or "grouped",
            seed=d.get("seed") or 0,
            restarts=bool(d.get("restarts")),
            watch=d.get("watch") or (),
            clean_timeout=d.get("clean_timeout") or DEFAULT_CLEAN_TIMEOUT,
            teardown_timeout=d.get("teardown_timeout") or DEFAULT_TEARDOWN_TIMEOUT,
            stored=True,
        )

    def digest(self) -> str:
        """What a person's approval of the sweep covers: its whole definition."""
        from todoledger.core.checkspec import sha256

        text = json.dumps(self.as_dict(), sort_keys=True, ensure_ascii=False)
        return sha256(text.encode("utf-8")).hexdigest()

    @property
    def has_lifecycle(self) -> bool:
        return any((self.setup, self.ready, self.teardown, self.clean))

    def combinations(self) -> list[tuple[dict[str, str], bool]]:
        """Every combination, then the baseline ones (the baseline values with each
        combination of the other parameters): (params, is_baseline)."""
        names = [n for n, _ in self.params]
        out = [
            (dict(zip(names, values, strict=True)), False)
            for values in itertools.product(*(v for _, v in self.params))
        ]
        if self.baseline:
            others = [(n, v) for n, v in self.params if n not in self.baseline]
            for values in itertools.product(*(v for _, v in others)):
                combo = dict(zip([n for n, _ in others], values, strict=True)) | self.baseline
                out.append(({n: combo[n] for n in names}, True))
        return out

    def title(self, combo: dict[str, str], baseline: bool) -> str:
        text = self.template.format_map(_Fill(combo))
        return f"{text} (baseline)" if baseline else text

    def parent_text(self) -> str:
        """The parent item's text: the template with each parameter's values
        (`Assisted decoding: k = 16, 8, 4, 2; baseline 0`)."""
        text = self.template.format_map(_Fill({n: ", ".join(v) for n, v in self.params}))
        if not self.baseline:
            return text
        if len(self.baseline) == 1 and len(self.params) == 1:
            return f"{text}; baseline {next(iter(self.baseline.values()))}"
        return f"{text}; baseline " + ", ".join(f"{k}={v}" for k, v in self.baseline.items())

    def command(self, combo: dict[str, str]) -> str:
        return self.run.format_map(_Fill({k: shlex.quote(v) for k, v in combo.items()}))

    def setup_command(self, combo: dict[str, str]) -> str | None:
        return None if self.setup is None else _shell(self.setup, combo)

    def teardown_command(self, combo: dict[str, str]) -> str | None:
        return None if self.teardown is None else _shell(self.teardown, combo)

    def ready_check(self, combo: dict[str, str]) -> Check | None:
        return None if self.ready is None else _check(self.ready, self.ready_options, combo)

    def clean_check(self, combo: dict[str, str]) -> Check | None:
        return (
            None if self.clean is None else _check(self.clean, _closed(self.clean, self.clean_options), combo)
        )

    def commands(self, combo: dict[str, str]) -> list[tuple[str, str]]:
        """What runs for a combination, in order, as a person approves it: (role, text)."""
        out: list[tuple[str, str]] = []
        setup = self.setup_command(combo)
        if setup is not None:
            out.append(("setup", setup))
        ready = self.ready_check(combo)
        if ready is not None:
            out.append(("ready", ready.describe()))
        out.append(("run", self.command(combo)))
        teardown = self.teardown_command(combo)
        if teardown is not None:
            out.append(("teardown", teardown))
        elif setup is not None:
            out.append(("teardown", "(the setup's process group is ended)"))
        clean = self.clean_check(combo)
        if clean is not None:
            out.append(("clean", clean.describe()))
        return out


def _shell(template: str, combo: dict[str, str]) -> str:
    return template.format_map(_Fill({k: shlex.quote(v) for k, v in combo.items()}))


def _check(template: str, options: dict[str, Any], combo: dict[str, str]) -> Check:
    kind = template.partition(":")[0]
    values = {k: shlex.quote(v) for k, v in combo.items()} if kind == "cmd" else combo
    return parse(template.format_map(_Fill(values)), options or None)


def _closed(spec: str, options: dict[str, Any]) -> dict[str, Any]:
    """A clean check of a port asks that nothing listens there any more."""
    if spec.strip().startswith("port:"):
        return {**options, "closed": True}
    return options


class _Fill(dict[str, str]):
    def __missing__(self, key: str) -> str:
        raise LedgerError(f"{{{key}}} is not a parameter of the sweep")


def _pairs(what: str, texts: list[str]) -> list[tuple[str, str]]:
    out = []
    for text in texts:
        name, sep, value = text.partition("=")
        name = name.strip()
        if not sep or not _NAME.match(name) or not value.strip():
            raise LedgerError(f"{what} {text!r}: write NAME=VALUE (e.g. draft_tokens=16,10,5)")
        out.append((name, value.strip()))
    return out


def define(
    name: str,
    *,
    template: str,
    params: list[str],
    run: str,
    metrics: list[str],
    repeat: int = 1,
    baseline: list[str] | None = None,
    keep: str | None = None,
    timeout: float = 3600.0,
    setup: str | None = None,
    ready: str | None = None,
    ready_options: dict[str, Any] | None = None,
    ready_timeout: float = DEFAULT_READY_TIMEOUT,
    teardown: str | None = None,
    clean: str | None = None,
    clean_options: dict[str, Any] | None = None,
    warmup: int = 0,
    order: str = "grouped",
    seed: int = 0,
    restarts: bool = False,
    watch: Sequence[str] = (),
    clean_timeout: float = DEFAULT_CLEAN_TIMEOUT,
    teardown_timeout: float = DEFAULT_TEARDOWN_TIMEOUT,
    stored: bool = False,
) -> Sweep:
    """Validate a sweep definition; one clear LedgerError line otherwise.
    `stored`: a definition read back from the ledger (not refused for what is only advice)."""
    if not _NAME.match(name or ""):
        raise LedgerError(f"sweep name {name!r}: letters, digits and _ (at most 64)")
    parsed = [(n, [x.strip() for x in v.split(",") if x.strip()]) for n, v in _pairs("--param", params)]
    if not parsed:
        raise LedgerError("a sweep needs at least one --param NAME=V1,V2,...")
    names = [n for n, _ in parsed]
    if len(set(names)) != len(names):
        raise LedgerError("each --param name once")
    for n, values in parsed:
        if len(set(values)) != len(values) or not values:
            raise LedgerError(f"--param {n}: distinct values, comma-separated")
    base = dict(_pairs("--baseline", baseline or []))
    for n in base:
        if n not in names:
            raise LedgerError(f"--baseline {n}: not a --param of the sweep")
    found = _pairs("--metric", metrics)
    if not found:
        raise LedgerError("a sweep needs at least one --metric NAME=REGEX (or NAME=$.json.path)")
    for n, expr in found:
        if not expr.startswith("$."):
            try:
                groups = re.compile(expr).groups
            except re.error as exc:
                raise LedgerError(f"--metric {n}: not a valid regular expression ({exc})") from None
            if groups != 1:
                raise LedgerError(
                    f"--metric {n}: the regular expression needs exactly one (group) for the number"
                )
    if not 1 <= repeat <= MAX_REPEAT:
        raise LedgerError(f"--repeat must be 1 to {MAX_REPEAT}")
    if not 0 <= warmup <= MAX_WARMUP:
        raise LedgerError(f"--warmup must be 0 to {MAX_WARMUP}")
    if order not in ORDERS:
        raise LedgerError(f"--order must be one of {', '.join(ORDERS)}, not {order!r}")
    if setup is not None and not setup.strip():
        raise LedgerError("--setup must not be empty")
    if teardown is not None and not teardown.strip():
        raise LedgerError("--teardown must not be empty")
    if teardown is not None and setup is None:
        raise LedgerError("--teardown ends what --setup started: give --setup")
    if setup is not None and order != "grouped" and not restarts and not stored:
        raise LedgerError(
            f"--order {order} with --setup restarts the setup between runs of different combinations:"
            " ask for it with --allow-restarts, or keep --order grouped"
        )
    if not 0 < ready_timeout <= MAX_TIMEOUT:
        raise LedgerError(f"--ready-timeout must be seconds between 0 and {MAX_TIMEOUT:g}")
    if not 0 < clean_timeout <= MAX_TIMEOUT:
        raise LedgerError(f"--clean-timeout must be seconds between 0 and {MAX_TIMEOUT:g}")
    if not 0 < teardown_timeout <= MAX_TIMEOUT:
        raise LedgerError(f"--teardown-timeout must be seconds between 0 and {MAX_TIMEOUT:g}")
    if keep is not None:
        rule = parse("metric:" + keep, {"baseline": "baseline"} if "baseline" in keep else None)
        if rule.target not in [n for n, _ in found]:
            raise LedgerError(f"--keep {keep!r}: {rule.target} is not a --metric of the sweep")
        if rule.ratio is not None and not base:
            raise LedgerError(f"--keep {keep!r} compares with the baseline: give --baseline")
    paths = [w for w in dict.fromkeys(watch) if w.strip()]
    sweep = Sweep(
        name,
        template,
        parsed,
        run,
        found,
        repeat,
        base,
        keep,
        timeout,
        setup,
        ready,
        dict(ready_options or {}),
        float(ready_timeout),
        teardown,
        clean,
        dict(clean_options or {}),
        warmup,
        order,
        seed,
        restarts,
        paths,
        float(clean_timeout),
        float(teardown_timeout),
    )
    combos = sweep.combinations()
    if len(combos) > MAX_COMBINATIONS:
        raise LedgerError(f"{len(combos)} combinations; the limit is {MAX_COMBINATIONS}")
    for combo, is_base in combos[:1]:
        try:  # unknown {names} refuse now, not mid-run
            sweep.title(combo, is_base), sweep.command(combo), sweep.parent_text()
            sweep.setup_command(combo), sweep.teardown_command(combo)
        except (ValueError, IndexError, AttributeError):
            raise LedgerError(
                "--template/--run/--setup/--teardown: {NAME} places a parameter; write {{ and }} for braces"
            ) from None
    for what, spec in (("--ready", ready), ("--clean", clean)):
        if spec is None:
            continue
        for combo, _ in combos:  # every combination's check must read, before anything runs
            try:
                built = sweep.ready_check(combo) if what == "--ready" else sweep.clean_check(combo)
            except (ValueError, IndexError, AttributeError):
                raise LedgerError(
                    f"{what}: {{NAME}} places a parameter; write {{{{ and }}}} for braces"
                ) from None
            except LedgerError as exc:
                raise LedgerError(f"{what}: {exc}") from None
            assert built is not None
            if what == "--ready" and built.kind == "metric":
                raise LedgerError(
                    "--ready: a metric: check has no target to poll; use cmd:, http(s)://, port: or file:"
                )
            if what == "--clean" and built.kind == "metric":
                raise LedgerError(
                    "--clean: a metric: check has no target to look at; use cmd:, port: or file:"
                )
    if not template.strip() or not run.strip():
        raise LedgerError("--template and --run must not be empty")
    return sweep


def schedule(sweep: Sweep, todo: dict[int, int], count: int) -> list[int]:
    """The order of the runs still to make: the combination index of each,
    `todo[index]` runs for each of the `count` combinations. `grouped`: a
    combination's runs together; `interleaved`: one run of each in turn;
    `shuffled`: a permutation of every run the sweep asks for, the same for
    the same seed, with the runs already made taken from its front (so a
    resumed sweep keeps the order it had)."""
    indexes = [i for i in range(count) if todo.get(i, 0) > 0]
    if sweep.order == "grouped":
        return [i for i in indexes for _ in range(todo[i])]
    if sweep.order == "interleaved":
        out = []
        for r in range(max((todo[i] for i in indexes), default=0)):
            out += [i for i in indexes if r < todo[i]]
        return out
    import random

    every = [i for i in range(count) for _ in range(sweep.repeat)]
    random.Random(sweep.seed).shuffle(every)
    skip = {i: sweep.repeat - todo.get(i, 0) for i in range(count)}  # runs made (or not asked) first
    out = []
    for i in every:
        if skip[i] > 0:
            skip[i] -= 1
            continue
        out.append(i)
    return out


def restarts(sweep: Sweep, order: list[int]) -> int:
    """How many times the setup starts for this order of runs."""
    if sweep.setup is None:
        return 0
    return sum(1 for n, i in enumerate(order) if n == 0 or order[n - 1] != i)


def extract(sweep: Sweep, output: str) -> dict[str, float]:
    """The metrics found in a run's output (a regex's group, or a path into the
    last line that parses as JSON). Missing ones are left out."""
    found: dict[str, float] = {}
    document: Any = None
    for name, expr in sweep.metrics:
        if expr.startswith("$."):
            if document is None:
                document = _last_json(output)
            value: Any = document
            for part in expr[2:].split("."):
                value = value.get(part) if isinstance(value, dict) else None
            if isinstance(value, int | float) and not isinstance(value, bool):
                found[name] = float(value)
        else:
            matches = re.findall(expr, output)
            if matches:
                with contextlib.suppress(ValueError):  # a group that is not a number: no value
                    found[name] = float(matches[-1])
    return found


def _last_json(output: str) -> Any:
    for line in reversed(output.strip().splitlines()):
        try:
            return json.loads(line)
        except ValueError:
            continue
    return {}


def summary(values: list[float]) -> dict[str, Any]:
    ordered = sorted(values)
    n, mid = len(ordered), len(ordered) // 2
    median = ordered[mid] if n % 2 else (ordered[mid - 1] + ordered[mid]) / 2
    spread = (ordered[-1] - ordered[0]) / abs(median) if median else 0.0
    return {"n": n, "median": median, "min": ordered[0], "max": ordered[-1], "spread": spread}


Runs = list[tuple[dict[str, str], bool, dict[str, list[tuple[float, bool]]]]]


def results(sweep: Sweep, runs: Runs, *, include_stale: bool = False) -> list[dict[str, Any]]:
    """One row per combination and metric: median/min/max/spread of the repeats,
    the ratio to the matching baseline, the keep verdict and flags. Each run's
    value comes with whether it is fresh for its recorded inputs; stale ones are
    left out (and counted in the flags) unless `include_stale`."""
    counted: list[tuple[dict[str, str], bool, dict[str, list[float]], dict[str, int]]] = []
    for combo, is_base, values in runs:
        used = {m: [v for v, fresh in got if fresh or include_stale] for m, got in values.items()}
        stale = {m: sum(1 for _, fresh in got if not fresh) for m, got in values.items()}
        counted.append((combo, is_base, used, stale))
    base_of: dict[tuple[tuple[str, str], ...], dict[str, list[float]]] = {}
    for combo, is_base, used, _ in counted:
        if is_base:
            base_of[_others(sweep, combo)] = used
    rule = (
        parse("metric:" + sweep.keep, {"baseline": "baseline"} if "baseline" in sweep.keep else None)
        if sweep.keep
        else None
    )
    out: list[dict[str, Any]] = []
    for combo, is_base, used, stale in counted:
        for metric, _ in sweep.metrics:
            row: dict[str, Any] = {"params": combo, "baseline": is_base, "metric": metric}
            row["stale"] = stale.get(metric, 0)
            got = used.get(metric, [])
            stale_flag = _stale_flag(row["stale"], include_stale)
            if not got:
                out.append(
                    row
                    | {
                        "n": 0,
                        "median": None,
                        "min": None,
                        "max": None,
                        "spread": None,
                        "ratio": None,
                        "verdict": None,
                        "flags": ["not run", *stale_flag]
                        if not row["stale"] or not include_stale
                        else stale_flag,
                    }
                )
                continue
            row |= summary(got)
            base_values = base_of.get(_others(sweep, combo), {}).get(metric, [])
            base_median = summary(base_values)["median"] if base_values else None
            row["ratio"] = row["median"] / base_median if base_median else None
            row["verdict"] = None
            flags = []
            if rule is not None and rule.target == metric and not is_base:
                threshold = (
                    rule.value if rule.ratio is None else (rule.ratio * base_median if base_median else None)
                )
                if threshold is not None and rule.op is not None:
                    row["verdict"] = "keep" if compare(row["median"], rule.op, threshold) else "discard"
                    reference = threshold if rule.ratio is None else base_median
                    assert reference is not None
                    why = _inconclusive(
                        got, base_values if rule.ratio is not None else None, row["median"], reference
                    )
                    if why:
                        row["verdict"] = "inconclusive"
                        flags.append(why)
            if row["n"] == 1:
                flags.append("single run")
            if row["n"] > 1 and row["spread"] > WIDE_SPREAD:
                flags.append("wide spread")
            row["flags"] = flags + stale_flag
            out.append(row)
    return out


def _stale_flag(count: int, included: bool) -> list[str]:
    if not count:
        return []
    runs = "run" if count == 1 else "runs"
    return [f"{count} stale {runs} included" if included else f"{count} stale {runs} left out"]


def _inconclusive(
    values: list[float], base: list[float] | None, median: float, reference: float
) -> str | None:
    """Why a verdict cannot be given: fewer than MIN_RUNS runs on either side, or a
    spread (max - min) on either side larger than the difference it decides on."""
    sides = [values] if base is None else [values, base]
    fewest = min(len(v) for v in sides)
    if fewest < MIN_RUNS:
        return f"too few runs ({fewest} < {MIN_RUNS})"
    difference = abs(median - reference)
    widest = max(max(v) - min(v) for v in sides)
    if widest > difference:
        what = "the baseline" if base is not None else "the threshold"
        return f"spread {widest:.4g} > difference {difference:.4g} to {what}"
    return None


def compare_sweeps(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Two sweeps' result rows side by side, matched by parameters and metric:
    each median, B's as a ratio of A's, and whether the difference is larger
    than both spreads (`differs`) or not (`within spread`)."""
    theirs = {_key(r): r for r in b}
    out: list[dict[str, Any]] = []
    seen = set()
    for r in a:
        k = _key(r)
        seen.add(k)
        out.append(_pair(r, theirs.get(k)))
    out += [_pair(None, r) for r in b if _key(r) not in seen]
    return out


def _key(row: dict[str, Any]) -> tuple[str, bool, str]:
    return json.dumps(row["params"], sort_keys=True), bool(row["baseline"]), str(row["metric"])


def _pair(a: dict[str, Any] | None, b: dict[str, Any] | None) -> dict[str, Any]:
    some = a or b
    assert some is not None
    row: dict[str, Any] = {
        "params": some["params"],
        "baseline": some["baseline"],
        "metric": some["metric"],
        "a": None if a is None else {k: a[k] for k in ("n", "median", "min", "max", "verdict")},
        "b": None if b is None else {k: b[k] for k in ("n", "median", "min", "max", "verdict")},
        "ratio": None,
        "change": "only in A" if b is None else ("only in B" if a is None else None),
    }
    if a is not None and b is not None:
        if a["median"] is None or b["median"] is None:
            row["change"] = "not run"
        else:
            row["ratio"] = b["median"] / a["median"] if a["median"] else None
            widest = max(a["max"] - a["min"], b["max"] - b["min"])
            few = min(a["n"], b["n"]) < MIN_RUNS
            differs = abs(b["median"] - a["median"]) > widest
            row["change"] = "too few runs" if few else ("differs" if differs else "within spread")
    return row


def compare_table(rows: list[dict[str, Any]]) -> list[list[str]]:
    """Rows of text for `sweep compare`, with a header."""
    out = [["params", "metric", "A n", "A median", "B n", "B median", "B/A", "change"]]
    for r in rows:
        params = " ".join(f"{k}={v}" for k, v in r["params"].items()) + (
            " (baseline)" if r["baseline"] else ""
        )
        a, b = r["a"] or {}, r["b"] or {}
        out.append(
            [
                params,
                r["metric"],
                str(a.get("n", "")),
                _fmt(a.get("median")),
                str(b.get("n", "")),
                _fmt(b.get("median")),
                "" if r["ratio"] is None else f"{r['ratio']:.2f}x",
                r["change"] or "",
            ]
        )
    return out


def result_notes(result: Mapping[str, Any]) -> list[str]:
    """What goes below a results table: stale runs, where the runs ran, what they depend on."""
    out = []
    if result.get("stale"):
        out.append(
            f"{result['stale']} stale runs (their inputs changed since): "
            + (
                "counted, and flagged"
                if result.get("include_stale")
                else "left out; --include-stale counts them"
            )
        )
    out += [f"ran on: {env}" for env in result.get("environments", [])]
    if result.get("inputs"):
        out.append(f"inputs (fresh for these, by content): {', '.join(result['inputs'])}")
    return out


def env_line(env: dict[str, Any] | None) -> str:
    """One line for people of where runs ran: host, GPUs, commit, Python."""
    if not env:
        return "no environment recorded"
    parts = [f"host {env.get('host', '?')}"]
    gpus = env.get("gpus")
    if gpus:
        names: dict[str, int] = {}
        for g in gpus:
            label = f"{g.get('name')} (driver {g.get('driver')})"
            names[label] = names.get(label, 0) + 1
        parts.append(", ".join(f"{n} x {k}" if n > 1 else k for k, n in names.items()))
    elif gpus is None:
        parts.append("no nvidia-smi")
    git = env.get("git")
    if git:
        parts.append(f"commit {str(git.get('commit', ''))[:10]}" + (" (dirty)" if git.get("dirty") else ""))
    parts.append(f"Python {env.get('python', '?')}")
    return ", ".join(parts)


def _others(sweep: Sweep, combo: dict[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple((n, combo[n]) for n, _ in sweep.params if n not in sweep.baseline)


def table(rows: list[dict[str, Any]]) -> list[list[str]]:
    """Rows of text for table/csv output, with a header."""
    head = ["params", "metric", "n", "median", "min", "max", "spread", "ratio", "verdict", "flags"]
    out = [head]
    for r in rows:
        params = " ".join(f"{k}={v}" for k, v in r["params"].items()) + (
            " (baseline)" if r["baseline"] else ""
        )
        out.append(
            [
                params,
                r["metric"],
                str(r["n"]),
                _fmt(r["median"]),
                _fmt(r["min"]),
                _fmt(r["max"]),
                "" if r["spread"] is None else f"{r['spread'] * 100:.1f}%",
                "" if r["ratio"] is None else f"{r['ratio']:.2f}x",
                r["verdict"] or "",
                ", ".join(r["flags"]),
            ]
        )
    return out


def lines(rows: list[list[str]]) -> list[str]:
    """The table's rows as aligned text lines."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]


def _fmt(value: float | None) -> str:
    return "" if value is None else f"{value:.4g}"
