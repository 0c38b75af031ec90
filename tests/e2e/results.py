"""The e2e run's results: what each real agent did on each route, one cell per
agent and route (tests/e2e/test_routes.py writes them into `results.json`).

docs/docgen.py renders them as the compatibility table of docs/agents.md
(`.venv/bin/python docs/docgen.py --update`); tests/test_docs.py fails while the
page differs, and tests/test_compat_table.py when a cell that is not a pass is
not explained by what install printed in that run.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = Path(os.environ.get("TODOLEDGER_E2E_RESULTS") or HERE / "results.json")
COLUMNS = (
    ("tools", "tools reach the model"),
    ("plan", "a scripted write lands"),
    ("recovery", "recovery text in the first request"),
    ("native", "native list mirrored"),
    ("gate", "Stop gate blocks once"),
    ("panel", "task panel from the plan (`--panel`)"),
)
# Claude Code's task panel (tests/e2e/test_panel_agents.py): the other agents have none to write.
NO_PANEL = {
    "ok": None,
    "how": "",
    "why": "no task panel to write (`--panel` is Claude Code's)",
    "applies": False,
}
AGENT_ORDER = ("claude-code", "opencode", "codex", "gemini")
ROUTE_ORDER = ("mcp", "cli", "both")


def load(path: Path = RESULTS) -> dict[str, Any]:
    if not path.exists():
        return {"cells": {}}
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    for cell in data["cells"].values():  # a cell from before the panel column: not run
        cell.setdefault("panel", {"ok": None, "how": "", "why": "not run"})
    return data


def record_panel(
    route: str, seen: dict[str, Any], path: Path = RESULTS, live: dict[str, Any] | None = None
) -> None:
    """Claude Code's panel column for one route (tests/e2e/test_panel_agents.py); `live`:
    what the interactive run under a pseudo-terminal saw (tests/e2e/test_panel_live.py)."""
    data = load(path)
    for name, cell in data["cells"].items():
        if not name.startswith("claude-code/"):
            cell["panel"] = NO_PANEL
    if route:
        data["cells"][f"claude-code/{route}"]["panel"] = seen
    if live is not None:
        data["panel_live"] = {**data.get("panel_live", {}), **live}
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def record(cell: dict[str, Any], path: Path = RESULTS) -> None:
    """Merge one agent × route cell into the results file (one pytest worker runs the e2e tests)."""
    data = load(path)
    name = f"{cell['agent']}/{cell['route']}"
    if "panel" not in cell:  # the panel column is test_panel_agents.py's: kept as it last recorded it
        before = data["cells"].get(name, {}).get("panel")
        cell = {
            **cell,
            "panel": before
            or (NO_PANEL if cell["agent"] != "claude-code" else {"ok": None, "how": "", "why": "not run"}),
        }
    data["cells"][name] = cell
    data["cells"] = dict(sorted(data["cells"].items(), key=lambda kv: order(kv[1])))
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def order(cell: dict[str, Any]) -> tuple[int, int]:
    return AGENT_ORDER.index(cell["agent"]), ROUTE_ORDER.index(cell["route"])


def unexplained(data: dict[str, Any]) -> list[str]:
    """Cells that are not ✔ and whose reason is not in what install printed for that run."""
    out = []
    for name, cell in data["cells"].items():
        printed = "\n".join(cell.get("install_output", []))
        for key, _ in COLUMNS:
            seen = cell[key]
            if seen.get("applies") is False:  # the agent has no such thing: nothing to explain
                continue
            if seen["ok"] is not True and (
                not seen.get("explained_by") or seen["explained_by"] not in printed
            ):
                out.append(f"{name} {key}: {seen.get('why')}")
    return out
