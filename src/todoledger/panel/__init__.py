"""Claude Code's task panel, written one way from a plan (`install claude-code --panel`).

The panel (ctrl+t, the "n/m tasks done" line) reads one JSON file per task from
`${CLAUDE_CONFIG_DIR:-~/.claude}/tasks/<list>/`; with `CLAUDE_CODE_TASK_LIST_ID`
set, every session of the project reads the same list. Install picks the list
id (per plan and project root, so worktrees get their own and a resume keeps
it), creates its folder and records where it is, so that every interface (a
hook, the CLI from a person's terminal, the MCP server, the board) finds the
same folder. This module is that lookup: stdlib only, because every write of
every interface asks it (`target`) and most projects have no panel; and lean,
because the Claude Code hook asks it on every call that can change the panel
(a hook's budget is a multiple of a bare interpreter's start, bench/bench_hooks.py):
no `json`, `re`, `hashlib`, `dataclasses` or `pathlib` on import or in `target`
(tests/test_lean_imports.py). Install's helpers load what they need themselves.
"""

from __future__ import annotations

import os

from todoledger.core.digests import sha256
from todoledger.core.record import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

LIST_VAR = "CLAUDE_CODE_TASK_LIST_ID"
TODO_TOOLS_VAR = "CLAUDE_CODE_ENABLE_TODO_TOOLS"
TASKS_VAR = "CLAUDE_CODE_ENABLE_TASKS"  # Claude Code's switch: "false" turns the task tools off
CONFIG_VAR = "CLAUDE_CONFIG_DIR"
PREFIX = "todoledger-"
_UNSAFE = r"[^a-zA-Z0-9_-]"  # Claude Code turns these into "-" in the folder name
_RECORDS = (".local", "state", "todoledger", "panels")  # under the home: one record per project


@dataclass(frozen=True)
class Target:
    """Where a plan's panel lives: the project, the plan, the list id and its folder."""

    project: str
    plan: str
    list_id: str
    folder: str


def project_key(project: Path | str) -> str:
    return str(sha256(os.path.realpath(project).encode("utf-8")).hexdigest())


def _safe(name: str) -> str:
    import re  # install's and doctor's: the hook's lookup never names a list

    return re.sub(_UNSAFE, "-", name)


def list_id(plan: str, project: Path | str) -> str:
    """`todoledger-<plan>-<8 hex of the project root's real path>`."""
    return f"{PREFIX}{_safe(plan)}-{project_key(project)[:8]}"


def config_dir(home: Path, env: dict[str, str] | None = None) -> Path:
    from pathlib import Path

    given = (env if env is not None else os.environ).get(CONFIG_VAR)
    return Path(given) if given else home / ".claude"


def tasks_folder(config: Path, list_name: str) -> Path:
    return config / "tasks" / _safe(list_name)


def any_installed(home: Path | None = None) -> bool:
    """Whether any project on this machine has a panel: one stat, before anything else is asked."""
    base = os.fspath(home) if home is not None else os.path.expanduser("~")
    return os.path.isdir(os.path.join(base, *_RECORDS))


def _record_file(home: Path | str, project: Path | str) -> str:
    return os.path.join(os.fspath(home), *_RECORDS, f"{project_key(project)[:16]}.json")


def record_path(home: Path, project: Path | str) -> Path:
    """The record install writes (and uninstall removes): in the home's state, never in the project."""
    from pathlib import Path

    return Path(_record_file(home, project))


def record_text(target: Target) -> str:
    import json

    data = {"project": target.project, "plan": target.plan, "list": target.list_id, "folder": target.folder}
    return json.dumps(data, indent=1) + "\n"


def project_root(start: str | None = None) -> str:
    """The git root above `start` (else `start`), as install finds the project."""
    from todoledger.store.locate import is_git_top

    here = os.path.realpath(start or os.getcwd())
    folder = here
    while True:
        if is_git_top(folder):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return here
        folder = parent


def target(cwd: str | None = None, home: Path | None = None) -> Target | None:
    """The panel recorded for the project around `cwd`, or None (one failed open)."""
    from todoledger.core.jsontext import loads  # json.loads's C scanner, without `json`'s import

    project = project_root(cwd)
    path = _record_file(home if home is not None else os.path.expanduser("~"), project)
    try:
        with open(path, encoding="utf-8") as fh:
            data = loads(fh.read())
        return Target(str(data["project"]), str(data["plan"]), str(data["list"]), str(data["folder"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None
