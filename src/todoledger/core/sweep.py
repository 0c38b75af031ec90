"""Parameter sweeps: the definition, its combinations, metric capture and results.

Pure: no I/O. A sweep expands into one item per combination of its
parameters (plus the baseline combinations); each run of its command records
the metrics it prints, and the results summarise the repeats per combination.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import re
import shlex

from todoledger.core.checkspec import compare, parse
from todoledger.core.model import LedgerError
from todoledger.core.record import dataclass, field

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
MAX_COMBINATIONS = 1_000
MAX_REPEAT = 100
WIDE_SPREAD = 0.10  # (max - min) / median above this is flagged


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

    def as_dict(self) -> dict[str, Any]:
        return {
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
        )

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

    def command(self, combo: dict[str, str]) -> str:
        return self.run.format_map(_Fill({k: shlex.quote(v) for k, v in combo.items()}))


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
) -> Sweep:
    """Validate a sweep definition; one clear LedgerError line otherwise."""
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
    if keep is not None:
        rule = parse("metric:" + keep, {"baseline": "baseline"} if "baseline" in keep else None)
        if rule.target not in [n for n, _ in found]:
            raise LedgerError(f"--keep {keep!r}: {rule.target} is not a --metric of the sweep")
        if rule.ratio is not None and not base:
            raise LedgerError(f"--keep {keep!r} compares with the baseline: give --baseline")
    sweep = Sweep(name, template, parsed, run, found, repeat, base, keep, timeout)
    combos = sweep.combinations()
    if len(combos) > MAX_COMBINATIONS:
        raise LedgerError(f"{len(combos)} combinations; the limit is {MAX_COMBINATIONS}")
    for combo, is_base in combos[:1]:
        try:  # unknown {names} refuse now, not mid-run
            sweep.title(combo, is_base), sweep.command(combo)
        except (ValueError, IndexError, AttributeError):
            raise LedgerError(
                "--template/--run: {NAME} places a parameter; write {{ and }} for braces"
            ) from None
    if not template.strip() or not run.strip():
        raise LedgerError("--template and --run must not be empty")
    return sweep


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


def results(
    sweep: Sweep, runs: list[tuple[dict[str, str], bool, dict[str, list[float]]]]
) -> list[dict[str, Any]]:
    """One row per combination and metric: median/min/max/spread of the repeats,
    the ratio to the matching baseline, the keep verdict and flags."""
    base_of: dict[tuple[tuple[str, str], ...], dict[str, list[float]]] = {}
    for combo, is_base, values in runs:
        if is_base:
            base_of[_others(sweep, combo)] = values
    rule = (
        parse("metric:" + sweep.keep, {"baseline": "baseline"} if "baseline" in sweep.keep else None)
        if sweep.keep
        else None
    )
    out: list[dict[str, Any]] = []
    for combo, is_base, values in runs:
        for metric, _ in sweep.metrics:
            row: dict[str, Any] = {"params": combo, "baseline": is_base, "metric": metric}
            got = values.get(metric, [])
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
                        "flags": ["not run"],
                    }
                )
                continue
            row |= summary(got)
            base_values = base_of.get(_others(sweep, combo), {}).get(metric, [])
            base_median = summary(base_values)["median"] if base_values else None
            row["ratio"] = row["median"] / base_median if base_median else None
            row["verdict"] = None
            if rule is not None and rule.target == metric and not is_base:
                threshold = (
                    rule.value if rule.ratio is None else (rule.ratio * base_median if base_median else None)
                )
                if threshold is not None and rule.op is not None:
                    row["verdict"] = "keep" if compare(row["median"], rule.op, threshold) else "discard"
            flags = []
            if row["n"] == 1:
                flags.append("single run")
            if row["n"] > 1 and row["spread"] > WIDE_SPREAD:
                flags.append("wide spread")
            row["flags"] = flags
            out.append(row)
    return out


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
