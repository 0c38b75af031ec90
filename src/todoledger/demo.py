"""The demo plan: the speculative-decoding campaign that the seeds dissect.

Facts from the seeds: an EAGLE-3 drafter for Kimi-K2.5 on 8 RTX PRO 6000
Blackwell GPUs (PCIe, no NVLink): the hero-run pipeline, the draft-token
sweep (16, 10, 5, no speculation), the quick probe of the AQ-MedAI K2
drafter, the concurrency levels (1, 4, 16, 32), and the assumptions the
seeds found unverified. The story is replayed with timestamps over days.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from todoledger.service import Ledger

DEMO_PLAN = "demo"
AGENT = "opencode:ses_kimi_k25"
USER = "cli:user"
START = dt.datetime(2026, 2, 10, 9, 0, tzinfo=dt.UTC)

# (key, content, priority, parent key, blockers)
ITEMS: list[tuple[str, str, str, str | None, tuple[str, ...]]] = [
    ("hero", "Hero run: train an EAGLE-3 drafter for Kimi-K2.5 on 25K samples", "high", None, ()),
    ("load", "Wait for vLLM server to finish loading (540 GB, 119 shards)", "high", "hero", ()),
    ("download", "Download AQ-MedAI/Kimi-K2-Instruct-eagle3 for finetuning base", "high", "hero", ()),
    (
        "generate",
        "Run inference: 25K samples from open-perfectblend, C=200, max 8K tokens, save to /data",
        "high",
        "hero",
        ("load",),
    ),
    (
        "extract",
        "Stop vLLM, extract hidden states from synthetic data on /data",
        "high",
        "hero",
        ("generate",),
    ),
    ("train", "Train EAGLE-3 (4 GPUs, 5 epochs)", "high", "hero", ("extract", "download")),
    ("fixkeys", "Fix weight keys (layers.0 -> midlayer) for SGLang", "high", "hero", ("train",)),
    ("deploy", "Deploy SGLang with EAGLE3 drafter (16 spec tokens)", "high", "hero", ("fixkeys",)),
    ("sweep", "Benchmark the draft-token sweep", "high", None, ("deploy",)),
    ("check", "Check if SGLang EAGLE3 server is still running on container", "high", "sweep", ()),
    ("b16", "SCP and run benchmark_eagle3.py on container (16 draft tokens)", "high", "sweep", ("check",)),
    ("b10", "Benchmark with 10 draft tokens", "high", "sweep", ("b16",)),
    ("b5", "Benchmark with 5 draft tokens", "high", "sweep", ("b10",)),
    ("b0", "Baseline benchmark without speculation", "high", "sweep", ("b5",)),
    ("probe", "Phase 0: Quick Probe — try AQ-MedAI K2 drafter directly with K2.5", "high", None, ("b0",)),
    ("kill", "Phase 0.1: Kill any existing server processes", "high", "probe", ()),
    (
        "prep",
        "Phase 0.2: Prepare AQ-MedAI drafter directory (fix config, verify vocab mappings)",
        "high",
        "probe",
        ("kill",),
    ),
    ("launch", "Phase 0.3: Launch SGLang with K2.5 base + AQ-MedAI drafter", "high", "probe", ("prep",)),
    (
        "probebench",
        "Phase 0.4: Benchmark the probe against the 82 tok/s baseline",
        "high",
        "probe",
        ("launch",),
    ),
    ("conc", "Benchmark best config at concurrency levels", "medium", None, ("probe",)),
    ("c1", "Benchmark at concurrency 1", "medium", "conc", ()),
    ("c4", "Benchmark at concurrency 4", "medium", "conc", ()),
    ("c16", "Benchmark at concurrency 16", "medium", "conc", ()),
    ("c32", "Benchmark at concurrency 32", "medium", "conc", ()),
    ("assume", "Assumptions to verify", "medium", None, ()),
    (
        "a_disk",
        "Verify /data has room for 25K samples of hidden states (~5.4 TB estimated, 2.8 TB free)",
        "high",
        "assume",
        (),
    ),
    (
        "a_steps",
        "Verify --speculative-num-steps 1 really drafts 16 tokens (it may draft only ~2)",
        "high",
        "assume",
        (),
    ),
    (
        "a_script",
        "Verify benchmark_eagle3.py measures single-stream tok/s correctly (never run before)",
        "medium",
        "assume",
        (),
    ),
    (
        "a_accept",
        "Verify the training accept length (~2.95, 74.7% acc) holds in live SGLang serving",
        "medium",
        "assume",
        (),
    ),
    (
        "a_restart",
        "Verify the server restarts cleanly between sweep configs (zombie GPU processes)",
        "medium",
        "assume",
        (),
    ),
    (
        "a_baseline",
        "Verify the no-speculation baseline is comparable (same CUDA graph capture settings)",
        "medium",
        "assume",
        (),
    ),
    (
        "a_hidden",
        "Verify K2 drafter hidden states align with K2.5 at layers 2, 30 and 58",
        "medium",
        "assume",
        (),
    ),
    ("a_norm", "Verify norm_before_residual in the AQ-MedAI drafter config", "low", "assume", ()),
    ("a_repeat", "Repeat benchmark runs after warm-up to measure variance", "low", "assume", ()),
]

# (hours after START, key, status, evidence or reason, writer)
STORY: list[tuple[float, str, str, str | None, str]] = [
    (0.0, "load", "in_progress", None, AGENT),
    (0.4, "load", "completed", "vLLM /health 200 after 22 min", AGENT),
    (0.5, "download", "in_progress", None, AGENT),
    (0.9, "download", "completed", "checkpoint on /data, weight shapes match K2.5", AGENT),
    (1.0, "generate", "in_progress", None, AGENT),
    (14.5, "generate", "completed", "37,312 samples, 87.8M tokens, 0 errors", AGENT),
    (14.6, "a_disk", "completed", "actual hidden states 4.6 TB after VM disk migration", USER),
    (15.0, "extract", "in_progress", None, AGENT),
    (26.0, "extract", "completed", "4.6 TB of hidden states extracted", AGENT),
    (26.5, "train", "in_progress", None, AGENT),
    (37.3, "train", "completed", "5 epochs, val full_acc_0 74.7%, est. accept length 2.95", AGENT),
    (37.4, "fixkeys", "in_progress", None, AGENT),
    (37.6, "fixkeys", "completed", "fix_eagle3_keys.py renamed 10 tensors layers.0.* -> midlayer.*", AGENT),
    (37.7, "deploy", "in_progress", None, AGENT),
    (38.0, "deploy", "completed", "server up after ~15 min with --speculative-num-draft-tokens 16", AGENT),
    (38.05, "hero", "completed", "drafter trained, keys fixed, deployed", AGENT),
    (38.1, "check", "in_progress", None, AGENT),
    (38.2, "check", "completed", "GET /health ok", AGENT),
    (38.3, "b16", "in_progress", None, AGENT),
    (38.8, "b16", "completed", "60 tok/s single stream (baseline 82): a 27% regression", AGENT),
    (38.9, "b10", "cancelled", "16-token run slower than baseline; switch to the AQ-MedAI probe", USER),
    (38.9, "b5", "cancelled", "superseded by the quick probe", USER),
    (39.0, "b0", "in_progress", None, AGENT),
    (39.6, "b0", "completed", "82 tok/s without speculation", AGENT),
    (39.7, "sweep", "completed", "16 tokens: 60 tok/s, baseline: 82 tok/s; 10 and 5 cancelled", USER),
    (40.0, "probe", "in_progress", None, AGENT),
    (40.1, "kill", "in_progress", None, AGENT),
    (40.2, "kill", "completed", "fuser -k /dev/nvidia*; GPU memory freed", AGENT),
    (40.3, "prep", "in_progress", None, AGENT),
    (
        40.8,
        "prep",
        "completed",
        "max_position_embeddings 262144; kept AQ-MedAI d2t (31,748/32,000 differ)",
        AGENT,
    ),
    (40.9, "launch", "in_progress", None, AGENT),
]


def load_demo(ledger: Ledger, *, plan: str = DEMO_PLAN, reset: bool = False) -> bool:
    """Build the demo plan; returns False if it was already there."""
    if ledger.show(plan)["items"]:
        if not reset:
            return False
        ledger.clear(plan, writer=USER)

    def at(hours: float) -> str:
        return (START + dt.timedelta(hours=hours)).strftime("%Y-%m-%dT%H:%M:%S.000Z")

    ids: dict[str, str] = {}
    for n, (key, content, priority, parent, blockers) in enumerate(ITEMS):
        row = ledger.add(
            content,
            plan=plan,
            writer=AGENT if not key.startswith("a_") else USER,
            parent=ids[parent] if parent else None,
            priority=priority,
            depends_on=[ids[b] for b in blockers],
            at=at(-1 + n / 100),
        )
        ids[key] = row["id"]
    for hours, key, status, note, writer in STORY:
        extra: dict[str, str] = {}
        if note and status == "completed":
            extra["evidence"] = note
        elif note:
            extra["reason"] = note
        ledger.update(
            ids[key], plan=plan, writer=writer, status=status, at=at(hours), kind="demo", force=True, **extra
        )
    return True
