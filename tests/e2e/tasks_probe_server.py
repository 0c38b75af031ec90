"""A tiny MCP server on stdio that answers long calls as MCP Tasks (SEP-2663).

It speaks only the 2026-07-28 protocol (each request carries the `_meta`
envelope; `server/discover` instead of `initialize`) and advertises the
`io.modelcontextprotocol/tasks` extension. Its purpose is to show what a real
client does with a task, so it keeps everything a client could be asked about
in files under a folder (`TASKS_PROBE_DIR`), never in memory: a new process of
this server, started after the first was killed, answers `tasks/get` for a task
the first one created.

Tools:
- `slow_job {label}`: a task when the request declared the extension, else a
  synchronous answer once the job is done. The job is done when the file
  `release-<label>` appears in the folder (the test decides when), or after
  `seconds` if given. Its result text is `slow_job <label> finished: <marker>`.
- `note {text}`: answers at once (the model's work while a task runs).

Every line read and written is appended to `trace.jsonl` in the folder, with
the time and this process's pid, so a test can read the protocol as it went.
"""

from __future__ import annotations

import json
import os
import secrets
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

VERSION = "2026-07-28"
TASKS = "io.modelcontextprotocol/tasks"
POLL_MS = 500
TTL_MS = 60 * 60 * 1000
DIR = Path(os.environ.get("TASKS_PROBE_DIR") or ".")
SERVER_INFO = {"name": "tasks-probe", "version": "1.0.0"}
META = {"io.modelcontextprotocol/serverInfo": SERVER_INFO}

TOOLS = [
    {
        "name": "slow_job",
        "description": "Run a long job (minutes). Returns its result when the job finishes.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "label": {"type": "string", "description": "A name for the job"},
                "seconds": {"type": "number", "description": "How long it runs (default: until released)"},
            },
            "required": ["label"],
        },
    },
    {
        "name": "note",
        "description": "Write a short note. Answers at once.",
        "inputSchema": {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
    },
]


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def trace(direction: str, message: Any) -> None:
    line = {"t": time.time(), "pid": os.getpid(), "dir": direction, "msg": message}
    with open(DIR / "trace.jsonl", "a", encoding="utf-8") as out:
        out.write(json.dumps(line) + "\n")


def declared_tasks(params: dict[str, Any]) -> bool:
    meta = params.get("_meta") or {}
    caps = meta.get("io.modelcontextprotocol/clientCapabilities") or {}
    return TASKS in (caps.get("extensions") or {})


def task_path(task_id: str) -> Path:
    return DIR / f"task-{task_id}.json"


def job_done(job: dict[str, Any]) -> bool:
    if (DIR / f"release-{job['label']}").exists():
        return True
    seconds = job.get("seconds")
    return isinstance(seconds, (int, float)) and time.time() >= job["started"] + seconds


def job_result(job: dict[str, Any]) -> dict[str, Any]:
    text = f"slow_job {job['label']} finished: PROBE-RESULT-{job['label']}"
    return {"content": [{"type": "text", "text": text}], "isError": False}


def task_view(task_id: str) -> dict[str, Any] | None:
    """The task's state as `tasks/get` answers it, read from its file."""
    path = task_path(task_id)
    if not path.exists():
        return None
    task = json.loads(path.read_text(encoding="utf-8"))
    view: dict[str, Any] = {
        "taskId": task_id,
        "createdAt": task["createdAt"],
        "ttlMs": TTL_MS,
        "pollIntervalMs": POLL_MS,
    }
    if task.get("cancelled"):
        return view | {"status": "cancelled", "lastUpdatedAt": task["cancelledAt"]}
    if job_done(task["job"]):
        if "finishedAt" not in task:
            task["finishedAt"] = now_iso()
            path.write_text(json.dumps(task), encoding="utf-8")
        return view | {
            "status": "completed",
            "lastUpdatedAt": task["finishedAt"],
            "result": job_result(task["job"]),
        }
    return view | {
        "status": "working",
        "statusMessage": f"slow_job {task['job']['label']}: working",
        "lastUpdatedAt": task["createdAt"],
    }


def call_tool(params: dict[str, Any]) -> dict[str, Any]:
    name, args = params.get("name"), params.get("arguments") or {}
    if name == "note":
        return {"content": [{"type": "text", "text": f"noted: {args.get('text')}"}], "isError": False}
    if name != "slow_job":
        return {"content": [{"type": "text", "text": f"no tool {name}"}], "isError": True}
    job = {"label": str(args.get("label") or "job"), "seconds": args.get("seconds"), "started": time.time()}
    if declared_tasks(params):
        task_id = secrets.token_hex(16)
        created = now_iso()
        # The task is on disk before the reply that names it.
        task_path(task_id).write_text(json.dumps({"createdAt": created, "job": job}), encoding="utf-8")
        return {
            "resultType": "task",
            "taskId": task_id,
            "status": "working",
            "statusMessage": f"slow_job {job['label']}: started",
            "createdAt": created,
            "lastUpdatedAt": created,
            "ttlMs": TTL_MS,
            "pollIntervalMs": POLL_MS,
        }
    while not job_done(job):  # no extension declared: the synchronous answer
        time.sleep(0.1)
    return job_result(job)


def answer(method: str, params: dict[str, Any]) -> dict[str, Any]:
    """The result of one request, or an "error" key with a JSON-RPC error."""
    if method == "server/discover":
        return {
            "supportedVersions": [VERSION],
            "capabilities": {"tools": {"listChanged": False}, "extensions": {TASKS: {}}},
            "instructions": "A probe for MCP Tasks.",
            "ttlMs": 0,
            "cacheScope": "private",
        }
    if method == "tools/list":
        return {"tools": TOOLS, "ttlMs": 0, "cacheScope": "private"}
    if method in ("prompts/list", "resources/list"):
        return {method.split("/")[0]: [], "ttlMs": 0, "cacheScope": "private"}
    if method == "tools/call":
        return call_tool(params)
    if method == "tasks/get":
        view = task_view(str(params.get("taskId")))
        return view if view is not None else {"error": {"code": -32602, "message": "task not found"}}
    if method == "tasks/cancel":
        path = task_path(str(params.get("taskId")))
        if not path.exists():
            return {"error": {"code": -32602, "message": "task not found"}}
        task = json.loads(path.read_text(encoding="utf-8"))
        task.update(cancelled=True, cancelledAt=now_iso())
        path.write_text(json.dumps(task), encoding="utf-8")
        return {}
    return {"error": {"code": -32601, "message": f"Method not found: {method}"}}


def main() -> None:
    DIR.mkdir(parents=True, exist_ok=True)
    trace("start", {"argv": sys.argv, "ppid": os.getppid()})
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            message = json.loads(line)
        except json.JSONDecodeError:
            trace("bad", line)
            continue
        trace("in", message)
        if "id" not in message or "method" not in message:
            continue  # a notification, or a response to a request we never make
        result = answer(message["method"], message.get("params") or {})
        if "error" in result:
            reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"], "error": result["error"]}
        else:
            result.setdefault("resultType", "complete")
            result.setdefault("_meta", META)
            reply = {"jsonrpc": "2.0", "id": message["id"], "result": result}
        trace("out", reply)
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
    trace("eof", None)


if __name__ == "__main__":
    main()
