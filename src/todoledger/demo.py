"""The demo: the todo calls that the five seeds (shared/seeds/) quote, and nothing else.

The seeds dissect five todo lists of one long opencode session: four of the
Kimi-K2.5 EAGLE-3 campaign (messages 2871, 4329, 4350 and 4950) and one of
the later Qwen3.5 campaign (message 6000), which gets its own plan. Each list
goes through the normal write path (`Ledger.write`, opencode shape) under
the agent's writer, in message order, so `report` tells what the ledger
makes of them.

No clock. The seeds give message numbers, not times, so every change is
recorded without a time of its own (`Ledger.untimed`, store migration
`untimed_ops`), with the message number: reports, the timeline and the board
order the story by sequence and show no duration.

The calls between the quoted ones are not in the seeds and are not made up. A
list that leaves out items of the list before it closes them (that is what a
whole-list write means), and since the lists between were not seen, the
ledger says so instead of calling them dropped.

Where a seed cuts a list off, the demo keeps exactly what the seed shows
(text cut with "..." stays cut; an item whose text is not shown is left out).
A reviewer (`cli:reviewer`, the seeds' reader) then adds what the seeds say
beyond the lists, each text citing its seed: what the refused call of message
4329 held; the statuses seed 001 gives for the list before message 4950; the
phase tree; the unverified assumptions as pending "Verify ..." items that
gate the work they guard; the draft-token sweep message 4350 plans, with
the baseline seed 001 reports (82 tok/s, typed on the baseline's row; its
60 tok/s with the drafter names no draft-token setting, so it is a note, no
row's); and the figures seed 004 quotes, as numbers the ledger checks.
"""

from __future__ import annotations

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
# The seeds never give the session's id. One session: its message numbers run on from
# 2871 to 6000, and seed 004 recalls the EAGLE-3 work of earlier segments.
AGENT = "opencode:ses_seeds"
REVIEWER = "cli:reviewer"
ID_SEED = "todoledger-demo"  # the same ids on every run (core/ids.py keeps its collision check)
KIMI, QWEN = "kimi", "qwen"
REVIEW = "the reviewer, from the seeds"  # where the reviewer's changes say they come from


@dataclass(frozen=True)
class Call:
    seed: str
    msg: int
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
        KIMI,
        _todos(
            ("Check if SGLang EAGLE3 server is still running on container", "in_progress", "high"),
            ("SCP and run benchmark_eagle3.py on container (16 draft tokens)", "pending", "high"),
            ("Benchmark with 10 draft tokens", "pending", "high"),
            ("Benchmark with 5 draft tokens", "pending", "high"),
        ),
    ),
    # Seed 001: the quick probe. Phase 0.3's text is cut in the seed and its status and priority
    # are not shown: it is written as pending (nothing claimed), with no priority (the ledger shows
    # its default), and the reviewer's note quotes what the seed says of it.
    Call(
        "001",
        4950,
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
        QWEN,
        _todos(
            ("Benchmark current baseline config (cutlass MoE + cudnn FP4, no spec)", "completed", "high"),
            ("Test NEXTN MTP speculative decoding", "in_progress", "high"),
            ("Test custom all-reduce (remove --disable-custom-all-reduce)", "pending", "high"),
            ("Benchmark best config at multiple concurrency levels", "pending", None),
        ),
    ),
]


# What the refused call of msg 4329 held, as seed 003 tells it: the reviewer's items, since the
# ledger applied nothing of the call. (content, status, evidence or note). The fourth item's
# status was lost to the duplicate "priority" key; seed 003 says it was pending.
REFUSED_4329: list[tuple[str, str, str]] = [
    (
        "Train EAGLE-3 (4 GPUs, 5 epochs)",
        "completed",
        "seed 003: the ~10.8-hour training run finished, producing checkpoints at all 5 epochs with a"
        " final validation accuracy of 74.7%, on 37,312 training samples",
    ),
    (
        "Fix weight keys (layers.0 -> midlayer) for SGLang",
        "completed",
        "seed 003: the weight key fix script had been written and executed successfully, renaming 10"
        " tensors from layers.0.* to midlayer.*",
    ),
    (
        "Deploy SGLang with EAGLE3 drafter (16 spec tokens)",
        "in_progress",
        "Seed 003: in progress in the call of msg 4329. Seed 000: the server launched in msg 4344, with"
        " 16 draft tokens.",
    ),
    (
        "Benchmark 16 speculative tokens",
        "pending",
        "Seed 003: marking 16-token benchmarking as pending while deployment was in progress (the call"
        ' lost this item\'s status to a duplicate "priority" key).',
    ),
]
REFUSED_NOTE = (
    "What the refused call of msg 4329 held (seed 003), recorded by the reviewer: the ledger applied"
    ' nothing of that call (a duplicate "priority" key).'
)
# Left out of the msg 4350 list, like the agent's own items of the lists before it.
LEFT_OUT_4350 = "not in the list of msg 4350 (seed 000), closed as left out, as the agent's own items were"

# Seed 001 tells the list before msg 4950, which it does not quote: (content, status, seed's words).
BEFORE_4950: list[tuple[str, str, str]] = [
    (
        "Phase 0.1: Kill any existing server processes",
        "in_progress",
        "Seed 001: Phase 0.1 went from in_progress to completed (msg 4950); the list before it, which"
        " the seeds do not quote, held it in progress.",
    ),
    (
        "Phase 0.2: Prepare AQ-MedAI drafter directory (fix config, verify vocab mappings)",
        "pending",
        "Seed 001: Phase 0.2 went from pending to completed (msg 4950); the list before it, which the"
        " seeds do not quote, held it pending.",
    ),
]
PHASE_0 = "Phase 0: Quick Probe — try AQ-MedAI K2 drafter directly with K2.5"
PHASE_ITEMS = (
    "Phase 0.1: Kill any existing server processes",
    "Phase 0.2: Prepare AQ-MedAI drafter directory (fix config, verify vocab mappings)",
    "Phase 0.3: Launch SGLang with K2.5 base + AQ-MedA...",
)


@dataclass(frozen=True)
class Assumption:
    """An assumption a seed names as unverified: a pending "Verify ..." item.

    `guards`: the items that wait for it (texts of the plan); `waits_for`: the
    items it waits for (it is checked by their result). `stand_in`: what
    `todoledger demo --checks` checks it against (demo_checks.py), if anything.
    Either way the item stays pending, which is the truth: nobody verified it
    on the campaign's machines.
    """

    plan: str
    text: str
    source: str
    guards: tuple[str, ...] = ()
    waits_for: tuple[str, ...] = ()
    stand_in: str | None = None


# The sweep message 4350 plans (seed 000: 16, 10, 5 draft tokens and a baseline without
# speculation), as the reviewer's sweep; this demo runs none of it. Seed 001 reports, at msg 4950,
# a baseline of 82 tok/s and 60 tok/s with the from-scratch drafter at a setting it does not name:
# 82 is typed on the baseline's row (SWEEP_MEASURED), the 60 only said in the sweep's note.
# Titles as `sweep add` makes them.
SWEEP = "draft_tokens"
SWEEP_TEMPLATE = "Benchmark at {draft_tokens} draft tokens, as msg 4350 plans"
SWEEP_VALUES = ("16", "10", "5")
SWEEP_BASELINE = "0"
SWEEP_MEASURED = {"tok_s": 82.0}  # seed 001: "The current baseline throughput was 82 tokens per second"
SWEEP_NOTE = (
    "seed 000, msg 4350: the sweep plans four configurations: 16, 10 and 5 draft tokens, and a"
    " baseline (no speculation). Seed 001 (msg 4950) reports a baseline of 82 tok/s and 60 tok/s with"
    " the from-scratch drafter, a 27% regression, without naming the draft-token setting that gave 60:"
    " 82 is typed on the baseline's row, the 60 on none. The seeds show no run of the 10- and 5-token"
    " benchmarks; this demo runs none of them."
)
SWEEP_RUN = (
    "echo 'benchmark_eagle3.py ran on the campaign container (seed 000): there is none here,"
    " so this demo never runs it' >&2; exit 3"
)


def sweep_item(tokens: str) -> str:
    text = SWEEP_TEMPLATE.format(draft_tokens=tokens)
    return f"{text} (baseline)" if tokens == SWEEP_BASELINE else text


SPECULATIVE = tuple(sweep_item(t) for t in SWEEP_VALUES)
RESTARTED = tuple(sweep_item(t) for t in ("10", "5", SWEEP_BASELINE))

ASSUMPTIONS: list[Assumption] = [
    Assumption(
        KIMI,
        "Verify /data has room for the hidden states of 25K samples (~5.4 TB estimated, 2.8 TB free)",
        "seed 002, msg 2871: the /data volume has only 2.8 TB free against ~5.4 TB estimated, not"
        " validated; seed 003: the extraction of 37,312 samples took ~4.6 TB, after a VM crash and a"
        " disk migration",
        stand_in="disk: a temporary folder for /data",
    ),
    Assumption(
        KIMI,
        "Verify the SGLang EAGLE3 server is still up after its ~15-minute start",
        "seed 000, msg 4350, assumption 1: the server launched in msg 4344 survived its 15-minute startup",
        guards=(sweep_item("16"),),
        stand_in="http: a local server for the SGLang /health endpoint",
    ),
    Assumption(
        KIMI,
        "Verify SGLang loads the drafter after the key fix (layers.0.* -> midlayer.*)",
        "seed 000, msg 4350, assumption 3: the fix is complete and correct, and SGLang can load the"
        " draft model without errors",
        guards=SPECULATIVE,
    ),
    Assumption(
        KIMI,
        "Verify the auxiliary hidden-state flag for Kimi-K2.5 is set",
        "seed 003: the zero acceptance rate was traced to two issues, the weight key names and a missing"
        " flag for auxiliary hidden state activation specific to the KimiK25 model; the key fix"
        " addresses the first",
        guards=SPECULATIVE,
    ),
    Assumption(
        KIMI,
        "Verify benchmark_eagle3.py measures single-stream tok/s correctly (written at msg 4346, never tested)",
        "seed 000, msg 4350, assumption 2: written in msg 4346 but never tested",
        guards=(*SPECULATIVE, sweep_item(SWEEP_BASELINE)),
        stand_in="cmd: the benchmark script against the local stand-in server",
    ),
    Assumption(
        KIMI,
        "Verify --speculative-num-steps 1 really drafts 16 tokens (it may draft only ~2)",
        "seed 000, msg 4350, potential mistakes: the effective number of draft tokens might be much"
        " smaller than 16",
        guards=(sweep_item("16"),),
    ),
    Assumption(
        KIMI,
        "Verify the training accept length (~2.95, 74.7% accuracy) holds in live SGLang serving",
        "seed 003, msg 4329; seed 000, assumption 4: the training metrics translate to inference performance",
    ),
    Assumption(
        KIMI,
        "Verify the server restarts cleanly between draft-token configurations (zombie GPU processes)",
        "seed 000, msg 4350, assumption 5: the server can be cleanly stopped and restarted between"
        " configurations",
        guards=RESTARTED,
    ),
    Assumption(
        KIMI,
        "Verify the no-speculation baseline is comparable (CUDA graph capture, memory layout, scheduling)",
        "seed 000, msg 4350, potential mistakes: the baseline benchmark may not be directly comparable",
        guards=(sweep_item(SWEEP_BASELINE),),
    ),
    Assumption(
        KIMI,
        "Verify norm_before_residual in the AQ-MedAI drafter config",
        "seed 001, msg 4950: the assistant did not verify whether the AQ-MedAI drafter's"
        " norm_before_residual field was set correctly",
        guards=("Phase 0.3: Launch SGLang with K2.5 base + AQ-MedA...",),
    ),
    Assumption(
        KIMI,
        "Verify K2 drafter hidden states align with K2.5 at layers 2, 30 and 58",
        "seed 001, msg 4950: this assumption would later be tested empirically when the server launched",
        waits_for=("Phase 0.3: Launch SGLang with K2.5 base + AQ-MedA...",),
    ),
    Assumption(
        QWEN,
        "Verify the baseline benchmark: repeat each concurrency level (1, 4, 16, 32) after a warm-up",
        "seed 004, msg 6000: marked completed after a single run at each concurrency level;"
        " a single data point at each concurrency level provides no information about stability",
        guards=("Benchmark best config at multiple concurrency levels",),
    ),
    Assumption(
        QWEN,
        "Verify bench_qwen.py is representative (the smoke test gave 72 tok/s, the benchmark 172 at C=1)",
        "seed 004, msg 6000, assumption 1: the benchmark script is assumed to be correct",
        guards=("Benchmark best config at multiple concurrency levels",),
    ),
    Assumption(
        QWEN,
        "Verify NEXTN MTP works on SM120 (other backends gave garbage output there)",
        "seed 004, msg 6000, assumption 2: this is an assumption, not a proven fact",
        waits_for=("Test NEXTN MTP speculative decoding",),
    ),
]

# Seed 004's order of the experiments: "baseline → NEXTN → custom all-reduce → benchmark best config".
QWEN_ORDER = (
    ("Benchmark best config at multiple concurrency levels", "Test NEXTN MTP speculative decoding"),
    (
        "Benchmark best config at multiple concurrency levels",
        "Test custom all-reduce (remove --disable-custom-all-reduce)",
    ),
)

# What the seeds say about items of the lists, added by the reviewer: (plan, item text, field, value).
# Evidence only where a seed names the proof of that item's completion; other facts are notes.
FACTS: list[tuple[str, str, str, str]] = [
    (
        KIMI,
        "Wait for vLLM server to finish loading",
        "notes",
        "Seed 002: model loading had been taking 22+ minutes at msg 2871.",
    ),
    (
        KIMI,
        "Download AQ-MedAI/Kimi-K2-Instruct-eagle3 for finetuning base",
        "notes",
        "Seeds 001 and 003: the drafter that was deployed was trained from scratch"
        " (4 GPUs, 5 epochs, 37,312 samples), not fine-tuned from this checkpoint.",
    ),
    (
        KIMI,
        "Stop vLLM, extract hidden states from synthetic data on /data...",
        "notes",
        "Seed 003: a VM crash and disk migration interrupted the hidden state extraction phase, which"
        " had to be restarted; 37,312 training samples were extracted with zero errors.",
    ),
    (
        KIMI,
        PHASE_0,
        "notes",
        "Seed 001 (msg 4950): the baseline was 82 tok/s; the from-scratch drafter gave 60 tok/s, a 27%"
        " regression. The seed does not say which draft-token setting gave 60.",
    ),
    (
        KIMI,
        "Phase 0.1: Kill any existing server processes",
        "evidence",
        "msg 4943: python processes killed via pct exec, then fuser -k /dev/nvidia*",
    ),
    (
        KIMI,
        "Phase 0.2: Prepare AQ-MedAI drafter directory (fix config, verify vocab mappings)",
        "evidence",
        "msgs 4944-4949: max_position_embeddings 131072 -> 262144; AQ-MedAI d2t kept"
        " (differs from K2.5's in 31,748 of 32,000 positions)",
    ),
    (
        KIMI,
        "Phase 0.3: Launch SGLang with K2.5 base + AQ-MedA...",
        "notes",
        "Seed 001: the seed cuts this item off and shows neither its status nor its priority; it says"
        " Phase 0.3 implicitly moved to in_progress. Written as pending: nothing is claimed.",
    ),
    (
        QWEN,
        "Benchmark current baseline config (cutlass MoE + cudnn FP4, no spec)",
        "evidence",
        "bench_qwen.py, msg 5997: 172 tok/s at C=1, 2,156 tok/s at C=32; one run per concurrency level",
    ),
]

# Seed 004's figures, as numbers on items (typed by the reviewer from the seed), and the
# agent's comparison with catid's result as checks of them.
QWEN_BASELINE = "Benchmark current baseline config (cutlass MoE + cudnn FP4, no spec)"
QWEN_FIGURES = {"tok_s_c1": 172.0, "tok_s_c32": 2156.0}  # seed 004, msg 5997
CATID_C32 = 1373.0  # seed 004: catid's published result, 1373 tok/s at C=32 with 4 GPUs
CLAIMED_RATIO = 3  # seed 004: "This is already 3x catid's result"
BEATS_CATID = (
    "Reviewer's gate: the baseline's tok/s at C=32 beats catid's 1373 (seed 004: 1373 tok/s at C=32"
    " with 4 GPUs). One run per concurrency level (seed 004); the reviewer's Verify item asks for more."
)
THREE_X = "Verify the agent's \"already 3x catid's result\" (2,156 vs catid's 1,373 tok/s at C=32)"
THREE_X_NOTE = (
    "seed 004, msg 6000: \"This is already 3x catid's result\"; catid's 1373 tok/s at C=32 with 4"
    " GPUs; this baseline 2156 tok/s at C=32 on eight GPUs. The reviewer's arithmetic: 3 x 1,373 = 4,119"
    " is what 3x needs; 2,156 / 1,373 = 1.57x; per GPU 2,156 / 8 = 269.5 against 1,373 / 4 = 343.25."
)


def three_x_needs() -> float:
    return CLAIMED_RATIO * CATID_C32


@dataclass
class Outcome:
    call: Call
    result: WriteResult | None  # None: refused
    refusal: str | None = None  # the ledger's one-line reason
    said: tuple[str, ...] = ()  # what the reviewer added around this call, one line each
    gap: str = ""  # why the list before it may not be the list it replaced

    def lines(self, ledger: Ledger) -> list[str]:
        """What the ledger made of the call, for people: refused, or added and closed items by name."""
        head = self.call.where
        if self.result is None:
            return [f"{head}: refused, nothing applied: {self.refusal}", *(f"  {s}" for s in self.said)]
        changes = self.result.changes
        added = sum(1 for c in changes if c["kind"] == "added")
        dropped = [c["item"] for c in changes if c["kind"] == "dropped"]
        matched = len({c["item"] for c in changes if c["kind"] == "status"} - set(dropped))
        text = f"{head}: {added} added to plan {self.result.plan}" + (
            f", {matched} updated" if matched else ""
        )
        out = [text, *(f"  {s}" for s in self.said if s.startswith("before it"))]
        if dropped:  # what the lists between held is not known: say so, never "dropped" as a fact
            out.append(
                f"  {len(dropped)} items of the list before are not in it, closed as left out: {self.gap},"
                " so whether they were done is not known"
            )
        out += [f"  {w.line()}" for w in self.result.warnings]
        out += [f"  {s}" for s in self.said if not s.startswith("before it")]
        return out


@dataclass
class Loaded:
    created: bool
    plans: list[str]
    outcomes: list[Outcome]
    review: list[str]  # what the reviewer added after the session, one line each


def plan_names(plan: str = DEMO_PLAN) -> dict[str, str]:
    return {KIMI: plan, QWEN: plan + QWEN_SUFFIX}


def load_demo(ledger: Ledger, *, plan: str = DEMO_PLAN) -> Loaded:
    """Build the demo plans (`plan` and `plan`-qwen); `created` is False if they were there.
    They are never rebuilt in place: their checks, numbers and sweep stay with the history
    (the ledger takes nothing back), so a fresh copy goes into other plans (`--plan NEW`)."""
    names = plan_names(plan)
    if any(ledger.show(name)["items"] for name in names.values()):
        return Loaded(False, list(names.values()), [], [])
    outcomes: list[Outcome] = []
    with seeded(ID_SEED):
        for call in CALLS:
            name = names[call.plan]
            before = _before_4950(ledger, name) if call.msg == 4950 else ()
            with ledger.untimed(call.msg):
                try:
                    result = ledger.write(
                        call.payload, plan=name, writer=AGENT, dialect="opencode", source_at=call.where
                    )
                except LedgerError as refusal:  # nothing applied
                    ledger.record_refused(
                        f"refused: {refusal}",
                        plan=name,
                        writer=AGENT,
                        dialect="opencode",
                        source_at=call.where,
                    )
                    outcomes.append(Outcome(call, None, str(refusal), _replay_4329(ledger, name)))
                    continue
            said = before + (_close_4329(ledger, name) if call.msg == 4350 else ())
            outcomes.append(Outcome(call, result, said=said, gap=_gap(call, outcomes)))
        review = _review(ledger, names)
    return Loaded(True, list(names.values()), outcomes, review)


def _gap(call: Call, outcomes: list[Outcome]) -> str:
    """Between this call and the plan's list before it: the calls the seeds do not quote."""
    mine = [o for o in outcomes if o.call.plan == call.plan]
    applied = [o for o in mine if o.result is not None]
    if not applied:
        return ""
    refused = [o.call.where for o in mine if o.result is None and o.call.msg > applied[-1].call.msg]
    also = f" ({', '.join(refused)} was refused)" if refused else ""
    return f"no list between {applied[-1].call.where} and {call.where} was seen{also}"


def _ids(ledger: Ledger, plan: str) -> dict[str, str]:
    return {i["content"]: i["id"] for i in ledger.show(plan)["items"]}


def _replay_4329(ledger: Ledger, plan: str) -> tuple[str, ...]:
    """The refused call's content as the agent believed it (seed 003), as the reviewer's items."""
    with ledger.untimed(where="the reviewer, from seed 003 (msg 4329)"):
        for content, status, said in REFUSED_4329:
            if status == "completed":
                row = ledger.add(
                    content, plan=plan, writer=REVIEWER, priority="high", status=status, notes=REFUSED_NOTE
                )
                ledger.update(row["id"], plan=plan, writer=REVIEWER, evidence=said)
            else:
                ledger.add(
                    content,
                    plan=plan,
                    writer=REVIEWER,
                    priority="high",
                    status=status,
                    notes=f"{REFUSED_NOTE} {said}",
                )
    return (
        "the reviewer records what it held, from seed 003: training completed (~10.8 h, 37,312 samples,"
        " 74.7% accuracy), the key fix completed, the SGLang deploy in progress, the 16-token benchmark pending",
    )


def _close_4329(ledger: Ledger, plan: str) -> tuple[str, ...]:
    """Msg 4350's list leaves out msg 4329's open items, as it leaves out the agent's own."""
    ids = _ids(ledger, plan)
    closed = 0
    with ledger.untimed(where="the reviewer, from seed 000 (msg 4350)"):
        for content, status, _ in REFUSED_4329:
            if status != "completed":
                ledger.cancel(ids[content], plan=plan, writer=REVIEWER, reason=LEFT_OUT_4350)
                closed += 1
    return (f"the reviewer closes the {closed} open items of msg 4329's content the same way",)


def _before_4950(ledger: Ledger, plan: str) -> tuple[str, ...]:
    """Seed 001 gives the statuses of the list before msg 4950: the reviewer records them."""
    with ledger.untimed(where="the reviewer, from seed 001 (the list before msg 4950)"):
        for content, status, said in BEFORE_4950:
            ledger.add(content, plan=plan, writer=REVIEWER, priority="high", status=status, notes=said)
    return (
        "before it, the reviewer records what seed 001 says the list before held:"
        " Phase 0.1 in progress, Phase 0.2 pending",
    )


def _review(ledger: Ledger, names: dict[str, str]) -> list[str]:
    """What the reviewer adds after the session, each citing its seed; one line each for the output."""
    kimi, qwen = names[KIMI], names[QWEN]
    with ledger.untimed(where=REVIEW):
        ids = _ids(ledger, kimi)
        for child in PHASE_ITEMS:  # seed 001: "Phase 0 → Phase 0.1 → Phase 0.2 → Phase 0.3"
            ledger.update(ids[child], plan=kimi, writer=REVIEWER, parent=ids[PHASE_0])
        for key, name in names.items():
            ids = _ids(ledger, name)
            for plan, text, field, value in FACTS:
                if plan == key:
                    old = ledger.get(ids[text], name).get(field) if field == "notes" else None
                    fact: dict[str, Any] = {field: "\n".join(filter(None, [old, value]))}  # notes or evidence
                    ledger.update(ids[text], plan=name, writer=REVIEWER, **fact)
        sweep_parent = ledger.add_sweep(
            SWEEP,
            template=SWEEP_TEMPLATE,
            params=[f"draft_tokens={','.join(SWEEP_VALUES)}"],
            baseline=[f"draft_tokens={SWEEP_BASELINE}"],
            run=SWEEP_RUN,
            metrics=[r"tok_s=tok_s=([0-9.]+)"],
            plan=kimi,
            writer=REVIEWER,
        )["parent"]
        ledger.update(
            sweep_parent,
            plan=kimi,
            writer=REVIEWER,
            notes=SWEEP_NOTE,
        )
        baseline_row = _ids(ledger, kimi)[sweep_item(SWEEP_BASELINE)]
        ledger.record_metrics(baseline_row, SWEEP_MEASURED, plan=kimi, writer=REVIEWER)
        gated: set[str] = set()
        for a in ASSUMPTIONS:
            name = names[a.plan]
            ids = _ids(ledger, name)
            row = ledger.add(
                a.text,
                plan=name,
                writer=REVIEWER,
                notes=f"{a.source}.",
                depends_on=[ids[t] for t in a.waits_for],
            )
            for guarded in a.guards:
                ledger.dep_add(ids[guarded], row["id"], plan=name, writer=REVIEWER)
                if a.plan == KIMI:
                    gated.add(ids[guarded])
        qids = _ids(ledger, qwen)
        for before, after in QWEN_ORDER:
            ledger.dep_add(qids[before], qids[after], plan=qwen, writer=REVIEWER)
        three_x = _check_figures(ledger, qwen)
    return [
        f"{kimi}: Phase 0.1-0.3 under Phase 0 (seed 001); {len([a for a in ASSUMPTIONS if a.plan == KIMI])}"
        f' "Verify ..." items for what the seeds found unverified; {len(gated)} items wait for them',
        f"{kimi}: the draft-token sweep msg 4350 plans (16, 10, 5 and no speculation: seed 000), none run"
        " here; seed 001's baseline of 82 tok/s typed on its baseline row (its 60 tok/s names no setting)",
        f"{qwen}: the baseline completed after one run per concurrency level (seed 004): a Verify item asks"
        " for repeats",
        f'{qwen}: "already 3x catid\'s result" (seed 004): {three_x}',
    ]


def _check_figures(ledger: Ledger, plan: str) -> str:
    """Seed 004's figures as numbers on items, and the agent's comparison as metric gates: no
    command runs, the ledger compares its own numbers. Returns the 3x claim's verdict."""
    base = _ids(ledger, plan)[QWEN_BASELINE]
    ledger.record_metrics(base, QWEN_FIGURES, plan=plan, writer=REVIEWER)
    ledger.add_check(base, f"metric:tok_s_c32>{CATID_C32:g}", plan=plan, writer=REVIEWER)
    ledger.update(base, plan=plan, writer=REVIEWER, notes=BEATS_CATID)
    claim = ledger.add(THREE_X, plan=plan, writer=REVIEWER, notes=THREE_X_NOTE)["id"]
    ledger.record_metrics(claim, {"tok_s_c32": QWEN_FIGURES["tok_s_c32"]}, plan=plan, writer=REVIEWER)
    ledger.add_check(claim, f"metric:tok_s_c32>={three_x_needs():g}", plan=plan, writer=REVIEWER)
    receipts = ledger.verify([base, claim], plan=plan, writer=REVIEWER)["receipts"]
    verdict = next(r for r in receipts if r["item"] == claim)
    ratio = QWEN_FIGURES["tok_s_c32"] / CATID_C32
    return (
        f"2,156 / 1,373 tok/s at C=32 is {ratio:.2f}x, not {CLAIMED_RATIO}x, and lower per GPU"
        f" (8 GPUs against 4); its Verify item's gate {verdict['result']}"
    )
