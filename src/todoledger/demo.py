"""The demo: the todo calls that the five seeds (shared/seeds/) quote, and nothing else.

The seeds dissect five todo lists of one long opencode session: four of the
Kimi-K2.5 EAGLE-3 campaign (messages 2871, 4329, 4350 and 4950) and one of
the later Qwen3.5 campaign (message 6000), which gets its own plan. Each list
goes through the normal write path (`Ledger.write`, opencode shape) under
the agent's writer, in message order, so `report` tells what the ledger
makes of them. The calls between them are not in the seeds and are not made
up: a list that leaves out items of the list before it drops them, which is
what a whole-list write means, not a claim that the work was abandoned.

Where a seed cuts a list off, the demo keeps exactly what the seed shows
(text cut with "..." stays cut; an item whose text is not shown is left out).
A reviewer (the seeds' author) then adds what the seeds say beyond the
lists: the unverified assumptions as pending "Verify ..." items, and the
figures the seeds quote, each citing its seed and message.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from todoledger.core.ids import seeded
from todoledger.core.model import LedgerError

if TYPE_CHECKING:
    from todoledger.ledger import Ledger
    from todoledger.ledger.writes import WriteResult

DEMO_PLAN = "demo"
QWEN_SUFFIX = "-qwen"
AGENT = "opencode:ses_kimi_k25"
REVIEWER = "cli:reviewer"
ID_SEED = "todoledger-demo"  # the same ids on every run (core/ids.py keeps its collision check)

# The seeds give message numbers, not clock times. The times below are only
# plausible: they keep the message order and the durations the seeds state
# (vLLM loading for 22+ minutes at msg 2871; inference, a restarted
# extraction and a ~10.8-hour training run before msg 4329; a ~15-minute
# server start before msg 4350). The reviewer's notes and "Verify ..." items
# follow a minute apart right after the last call of their plan, so that
# they do not stretch the plan's durations.
KIMI, QWEN = "kimi", "qwen"


@dataclass(frozen=True)
class Call:
    seed: str
    msg: int
    at: str
    plan: str  # KIMI or QWEN
    payload: str  # the todowrite arguments as the agent sent them (JSON text: keys may repeat)

    @property
    def where(self) -> str:
        return f"msg {self.msg} (seed {self.seed})"


def _todos(*items: tuple[str, str, str | None]) -> str:
    """(content, status, priority or None where the seed cuts it off) -> opencode arguments,
    with the keys in the order of the raw calls the seeds print (content, priority, status)."""
    todos = [{"content": c} | ({"priority": p} if p else {}) | {"status": s} for c, s, p in items]
    return json.dumps({"todos": todos}, ensure_ascii=False, separators=(",", ":"))


CALLS: list[Call] = [
    # Seed 002: after the user chose "run local, /data, 25K samples, train on one GPU" (msg 2870).
    # The fourth text is cut in the seed ("...") and the training step is "not shown".
    Call(
        "002",
        2871,
        "2026-02-10T09:00:00.000Z",
        KIMI,
        _todos(
            ("Wait for vLLM server to finish loading", "in_progress", "high"),
            ("Download AQ-MedAI/Kimi-K2-Instruct-eagle3 for finetuning base", "pending", "high"),
            (
                "Run inference: 25K samples from open-perfectblend, C=200, max 8K tokens, save to /data",
                "pending",
                "high",
            ),
            ("Stop vLLM, extract hidden states from synthetic data on /data...", "pending", "high"),
        ),
    ),
    # Seed 003: the fourth item has "priority" twice and no status, exactly as the seed prints it;
    # lint refuses the call and nothing of it is applied. The seed's text stops at a fifth item
    # "Benc...", whose text is not shown: it is left out.
    Call(
        "003",
        4329,
        "2026-02-12T08:00:00.000Z",
        KIMI,
        '{"todos":[{"content":"Train EAGLE-3 (4 GPUs, 5 epochs)","priority":"high","status":"completed"},'
        '{"content":"Fix weight keys (layers.0 -> midlayer) for SGLang","priority":"high","status":"completed"},'
        '{"content":"Deploy SGLang with EAGLE3 drafter (16 spec tokens)","priority":"high",'
        '"status":"in_progress"},'
        '{"content":"Benchmark 16 speculative tokens","priority":"pending","priority":"high"}]}',
    ),
    # Seed 000: the list written right after the long state-of-the-union message 4348. Its fifth
    # element is shown only as "..." ("additional items for baseline benchmarking"): left out.
    Call(
        "000",
        4350,
        "2026-02-12T08:30:00.000Z",
        KIMI,
        _todos(
            ("Check if SGLang EAGLE3 server is still running on container", "in_progress", "high"),
            ("SCP and run benchmark_eagle3.py on container (16 draft tokens)", "pending", "high"),
            ("Benchmark with 10 draft tokens", "pending", "high"),
            ("Benchmark with 5 draft tokens", "pending", "high"),
        ),
    ),
    # Seed 001: the quick probe. Phase 0.3's text is cut in the seed and its status and priority
    # are not shown; the seed says the launch came next, so it is written as pending, with no
    # priority (the ledger shows its default).
    Call(
        "001",
        4950,
        "2026-02-12T20:00:00.000Z",
        KIMI,
        _todos(
            ("Phase 0: Quick Probe — try AQ-MedAI K2 drafter directly with K2.5", "in_progress", "high"),
            ("Phase 0.1: Kill any existing server processes", "completed", "high"),
            (
                "Phase 0.2: Prepare AQ-MedAI drafter directory (fix config, verify vocab mappings)",
                "completed",
                "high",
            ),
            ("Phase 0.3: Launch SGLang with K2.5 base + AQ-MedA...", "pending", None),
        ),
    ),
    # Seed 004: Qwen3.5-397B-A17B-NVFP4, its own campaign. The fourth item's priority is cut off.
    Call(
        "004",
        6000,
        "2026-02-14T12:00:00.000Z",
        QWEN,
        _todos(
            ("Benchmark current baseline config (cutlass MoE + cudnn FP4, no spec)", "completed", "high"),
            ("Test NEXTN MTP speculative decoding", "in_progress", "high"),
            ("Test custom all-reduce (remove --disable-custom-all-reduce)", "pending", "high"),
            ("Benchmark best config at multiple concurrency levels", "pending", None),
        ),
    ),
]


@dataclass(frozen=True)
class Assumption:
    """An assumption a seed names as unverified: a pending "Verify ..." item.

    `stand_in` is the local stand-in a check runs against. Those `checked`
    get their check from `todoledger demo --checks` (demo_checks.py); the others
    have none yet. Either way the item stays pending, which is the truth:
    nobody verified it on the campaign's machines.
    """

    plan: str
    text: str
    source: str
    stand_in: str
    checked: bool = False


ASSUMPTIONS: list[Assumption] = [
    Assumption(
        KIMI,
        "Verify /data has room for the hidden states of 25K samples (~5.4 TB estimated, 2.8 TB free)",
        "seed 002, msg 2871: not validated; seed 003: the extraction of 37,312 samples"
        " (87.8M tokens) took ~4.6 TB, after a VM crash and a disk migration",
        "disk: a temporary folder for /data",
        checked=True,
    ),
    Assumption(
        KIMI,
        "Verify the SGLang EAGLE3 server is still up after its ~15-minute start",
        "seed 000, msg 4350, assumption 1",
        "http: a local server for the SGLang /health endpoint",
        checked=True,
    ),
    Assumption(
        KIMI,
        "Verify SGLang loads the drafter after the key fix (layers.0.* -> midlayer.*)",
        "seed 003, msg 4329; seed 000, assumption 3",
        "cmd: a script that loads the checkpoint's keys",
    ),
    Assumption(
        KIMI,
        "Verify benchmark_eagle3.py measures single-stream tok/s correctly (written at msg 4346, never run)",
        "seed 000, msg 4350, assumption 2",
        "cmd: the benchmark script against the local stand-in server",
        checked=True,
    ),
    Assumption(
        KIMI,
        "Verify --speculative-num-steps 1 really drafts 16 tokens (it may draft only ~2)",
        "seed 000, msg 4350, potential mistakes",
        "metric: the accept length the server reports",
    ),
    Assumption(
        KIMI,
        "Verify the training accept length (~2.95, 74.7% accuracy) holds in live SGLang serving",
        "seed 003, msg 4329; seed 000, assumption 4",
        "metric: accept length from the benchmark",
    ),
    Assumption(
        KIMI,
        "Verify the server restarts cleanly between draft-token configurations (zombie GPU processes)",
        "seed 000, msg 4350, assumption 5",
        "port: the server's port closes and reopens",
    ),
    Assumption(
        KIMI,
        "Verify the no-speculation baseline is comparable (CUDA graph capture, memory layout, scheduling)",
        "seed 000, msg 4350, potential mistakes",
        "metric: baseline measured with the same settings",
    ),
    Assumption(
        KIMI,
        "Verify K2 drafter hidden states align with K2.5 at layers 2, 30 and 58",
        "seed 001, msg 4950; seed 002 (AQ-MedAI checkpoint compatible with K2.5)",
        "metric: accept length of the probe",
    ),
    Assumption(
        KIMI,
        "Verify norm_before_residual in the AQ-MedAI drafter config",
        "seed 001, msg 4950: named in the game plan, not checked",
        "cmd: a check of the drafter's config.json",
    ),
    Assumption(
        QWEN,
        "Verify the baseline benchmark: repeat each concurrency level (1, 4, 16, 32) after a warm-up",
        "seed 004, msg 6000: marked completed after a single run per concurrency level, no variance",
        "cmd: the benchmark repeated (a sweep with repeats)",
    ),
    Assumption(
        QWEN,
        "Verify bench_qwen.py is representative (the smoke test gave 72 tok/s, the benchmark 172 at C=1)",
        "seed 004, msg 6000, assumption 1",
        "cmd: the benchmark script against the local stand-in server",
    ),
    Assumption(
        QWEN,
        "Verify NEXTN MTP works on SM120 (other backends gave garbage output there)",
        "seed 004, msg 6000, assumption 2",
        "cmd: a smoke test of the MTP heads",
    ),
]

# What the seeds say about items of the lists, added by the reviewer: (plan, item text, field, value).
# Evidence only where a seed names the proof of that item's completion; other facts are notes.
FACTS: list[tuple[str, str, str, str]] = [
    (
        KIMI,
        "Download AQ-MedAI/Kimi-K2-Instruct-eagle3 for finetuning base",
        "notes",
        "Seeds 001 and 003: the drafter that was deployed was trained from scratch"
        " (4 GPUs, 5 epochs, 37,312 samples), not fine-tuned from this checkpoint.",
    ),
    (
        KIMI,
        "Phase 0: Quick Probe — try AQ-MedAI K2 drafter directly with K2.5",
        "notes",
        "Seed 001 (game plan, msg 4937): 82 tok/s without speculation; the from-scratch drafter"
        " gave 60 tok/s, a 27% regression. The seeds do not say which draft-token setting gave 60.",
    ),
    (
        KIMI,
        "Phase 0.1: Kill any existing server processes",
        "evidence",
        "msg 4943: python processes killed via pct exec, then fuser -k /dev/nvidia*",
    ),
    (
        KIMI,
        "Phase 0.1: Kill any existing server processes",
        "notes",
        "Seed 001: in progress in the list before msg 4950, which the seeds do not quote.",
    ),
    (
        KIMI,
        "Phase 0.2: Prepare AQ-MedAI drafter directory (fix config, verify vocab mappings)",
        "notes",
        "Seed 001: pending in the list before msg 4950, which the seeds do not quote.",
    ),
    (
        KIMI,
        "Phase 0.2: Prepare AQ-MedAI drafter directory (fix config, verify vocab mappings)",
        "evidence",
        "msgs 4944-4949: max_position_embeddings 131072 -> 262144; AQ-MedAI d2t kept"
        " (differs from K2.5's in 31,748 of 32,000 positions)",
    ),
    (
        QWEN,
        "Benchmark current baseline config (cutlass MoE + cudnn FP4, no spec)",
        "evidence",
        "bench_qwen.py, msg 5997: 172 tok/s at C=1, 2,156 tok/s at C=32; one run per concurrency level",
    ),
]


@dataclass
class Outcome:
    call: Call
    result: WriteResult | None  # None: refused
    refusal: str | None = None  # the ledger's one-line reason

    def lines(self, ledger: Ledger) -> list[str]:
        """What the ledger made of the call, for people: refused, or added and dropped items by name."""
        head = self.call.where
        if self.result is None:
            return [f"{head}: refused, nothing applied: {self.refusal}"]
        changes = self.result.changes
        added = sum(1 for c in changes if c["kind"] == "added")
        dropped = [c["item"] for c in changes if c["kind"] == "dropped"]
        was_doing = {
            c["item"] for c in changes if c["kind"] == "status" and c.get("old") == "in_progress"
        } & set(dropped)
        text = f"{head}: {added} added to plan {self.result.plan}"
        if dropped:
            text += f", {len(dropped)} dropped (left out of this list while open)"
        out = [text]
        plan = self.result.plan
        out += [
            f'  dropped while in progress: "{ledger.get(i, plan)["content"]}"'
            for i in dropped
            if i in was_doing
        ]
        out += [f"  {w.line()}" for w in self.result.warnings]
        return out


@dataclass
class Loaded:
    created: bool
    plans: list[str]
    outcomes: list[Outcome]


def plan_names(plan: str = DEMO_PLAN) -> dict[str, str]:
    return {KIMI: plan, QWEN: plan + QWEN_SUFFIX}


def load_demo(ledger: Ledger, *, plan: str = DEMO_PLAN, reset: bool = False) -> Loaded:
    """Build the demo plans (`plan` and `plan`-qwen); `created` is False if they were there."""
    names = plan_names(plan)
    if any(ledger.show(name)["items"] for name in names.values()):
        if not reset:
            return Loaded(False, list(names.values()), [])
        for name in names.values():
            ledger.clear(name, writer=REVIEWER)
    outcomes: list[Outcome] = []
    with seeded(ID_SEED):
        for call in CALLS:
            try:
                result = ledger.write(
                    call.payload,
                    plan=names[call.plan],
                    writer=AGENT,
                    dialect="opencode",
                    at=call.at,
                    source_at=call.where,
                )
            except LedgerError as refusal:  # nothing applied
                outcomes.append(Outcome(call, None, str(refusal)))
                _tell_refused(ledger, call, names[call.plan], str(refusal))
            else:
                outcomes.append(Outcome(call, result))
        _review(ledger, names)
    return Loaded(True, list(names.values()), outcomes)


def _tell_refused(ledger: Ledger, call: Call, plan: str, reason: str) -> None:
    """Tell the refused call in the plan's story, as `ingest` does."""
    ledger.record_refused(
        f"refused: {reason}", plan=plan, writer=AGENT, dialect="opencode", at=call.at, source_at=call.where
    )


def _review(ledger: Ledger, names: dict[str, str]) -> None:
    for key, name in names.items():
        last = max(dt.datetime.fromisoformat(c.at) for c in CALLS if c.plan == key)
        stamps = (
            (last + dt.timedelta(minutes=n)).strftime("%Y-%m-%dT%H:%M:%S.000Z") for n in itertools.count(1)
        )
        items = {i["content"]: i["id"] for i in ledger.show(name)["items"]}
        for plan, text, field, value in FACTS:
            if plan == key:
                fact: dict[str, Any] = {field: value}  # notes or evidence
                ledger.update(items[text], plan=name, writer=REVIEWER, at=next(stamps), **fact)
        for a in ASSUMPTIONS:
            if a.plan == key:
                ledger.add(
                    a.text,
                    plan=name,
                    writer=REVIEWER,
                    notes=f"{a.source}. "
                    + (
                        f"`todoledger demo --checks` checks it against {a.stand_in}."
                        if a.checked
                        else f"Check to come, against {a.stand_in}."
                    ),
                    at=next(stamps),
                )
