"""`todoledger show` on a real terminal (a pseudo-terminal, the real command):
open work first, finished work folded unless --all, long plans paged as
`git log` pages them, a pipe never paged."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

from tests.conftest import subprocess_env, todoledger_bin
from todoledger.ledger import Ledger

ROWS, COLS = 20, 100
SGR = re.compile(r"\x1b\[[0-9;]*m")


def on_terminal(args: list[str], env: dict[str, str]) -> str:
    """The command's output on a terminal of ROWS x COLS, colour codes removed."""
    return SGR.sub("", on_terminal_raw(args, env))


def plan_of(db: Path | str, open_items: int, done_items: int) -> None:
    with Ledger(db) as lg:
        for k in range(open_items + done_items):
            row = lg.add(f"step {k}", writer="cli:tester")
            if k >= open_items:
                lg.done(row["id"], writer="cli:tester")


def pager_env(db: Path | str, tmp_path: Path, pager: str | None) -> tuple[dict[str, str], Path]:
    """The environment with PAGER set to a program that keeps what it was given."""
    kept = tmp_path / "paged.txt"
    script = tmp_path / "pager.py"
    script.write_text(f"import sys\nopen({str(kept)!r}, 'w').write(sys.stdin.read())\n", encoding="utf-8")
    env = subprocess_env(db)
    env.pop("TODOLEDGER_PAGER", None)
    env.pop("LESS", None)
    env["PAGER"] = f"{sys.executable} {script}" if pager is None else pager
    return env, kept


def test_a_long_plan_goes_through_the_pager(ledger_env: Path | str, tmp_path: Path) -> None:
    plan_of(ledger_env, 40, 5)
    env, kept = pager_env(ledger_env, tmp_path, None)
    shown = on_terminal([todoledger_bin(), "show"], env)
    assert "step 0" not in shown  # the pager had it, not the terminal
    paged = SGR.sub("", kept.read_text(encoding="utf-8"))
    lines = paged.splitlines()
    assert lines[0].startswith("plan main · revision ")
    assert "40 pending, 5 completed" in lines[0]
    assert [line.split()[4] for line in lines[1:41]] == [str(k) for k in range(40)]  # open work, in order
    assert lines[41] == "(5 completed not shown: todoledger show --all)"
    assert "\x1b[" in kept.read_text(encoding="utf-8")  # colours kept for the pager (less -R)


def test_no_pager_and_pager_cat_write_to_the_terminal(ledger_env: Path | str, tmp_path: Path) -> None:
    plan_of(ledger_env, 40, 5)
    env, kept = pager_env(ledger_env, tmp_path, None)
    shown = on_terminal([todoledger_bin(), "show", "--no-pager"], env)
    assert "step 39" in shown and not kept.exists()
    for off in ("cat", ""):
        shown = on_terminal([todoledger_bin(), "show"], env | {"PAGER": off})
        assert "step 39" in shown and "(5 completed not shown: todoledger show --all)" in shown
    assert not kept.exists()


def test_todoledger_pager_wins_over_pager(ledger_env: Path | str, tmp_path: Path) -> None:
    plan_of(ledger_env, 40, 0)
    env, kept = pager_env(ledger_env, tmp_path, "cat")
    script = tmp_path / "pager.py"
    env["TODOLEDGER_PAGER"] = f"{sys.executable} {script}"
    on_terminal([todoledger_bin(), "show"], env)
    assert "step 39" in kept.read_text(encoding="utf-8")


def test_a_plan_that_fits_the_screen_is_not_paged(ledger_env: Path | str, tmp_path: Path) -> None:
    plan_of(ledger_env, 5, 2)
    env, kept = pager_env(ledger_env, tmp_path, None)
    shown = on_terminal([todoledger_bin(), "show"], env)
    assert "step 4" in shown and "step 5" not in shown and not kept.exists()
    assert "(2 completed not shown: todoledger show --all)" in shown


def test_a_missing_pager_never_swallows_the_plan(ledger_env: Path | str, tmp_path: Path) -> None:
    plan_of(ledger_env, 40, 0)
    env, _ = pager_env(ledger_env, tmp_path, "no-such-pager-anywhere -R")
    assert "step 39" in on_terminal([todoledger_bin(), "show"], env)


def test_all_draws_the_finished_work_after_the_open_work(ledger_env: Path | str, tmp_path: Path) -> None:
    plan_of(ledger_env, 3, 2)
    env, _ = pager_env(ledger_env, tmp_path, "cat")
    lines = on_terminal([todoledger_bin(), "show", "--all"], env).splitlines()
    assert [line.split()[4] for line in lines[1:4]] == ["0", "1", "2"]
    assert lines[4] == "completed and cancelled (2 completed):"
    assert [line.split()[4] for line in lines[5:7]] == ["3", "4"]


def test_a_pipe_is_never_paged(ledger_env: Path | str, tmp_path: Path) -> None:
    plan_of(ledger_env, 40, 1)
    env, kept = pager_env(ledger_env, tmp_path, None)
    out = subprocess.run([todoledger_bin(), "show"], env=env, capture_output=True, text=True, check=True)
    assert "step 39" in out.stdout and "\x1b" not in out.stdout and not kept.exists()
    assert "(1 completed not shown: todoledger show --all)" in out.stdout


def test_wide_text_wraps_under_its_column(ledger_env: Path | str, tmp_path: Path) -> None:
    with Ledger(ledger_env) as lg:
        lg.add("測試 " * 40 + "end", writer="cli:tester")
    env, _ = pager_env(ledger_env, tmp_path, "cat")
    lines = on_terminal([todoledger_bin(), "show"], env).splitlines()[1:-1]
    assert len(lines) > 1
    indent = lines[0].index("測")
    assert all(line[:indent].strip() == "" for line in lines[1:])
    # two cells a character: no line is wider than the terminal
    assert all(sum(2 if "\u4e00" <= ch <= "\u9fff" else 1 for ch in line) <= COLS for line in lines)
    assert lines[-1].rstrip().endswith("end  ready")


HEAVY = ("click", "rich")
PROBE = (
    "import json, sys\nfrom todoledger.cli.entry import main\n"
    "try:\n    main(sys.argv[1:])\nexcept SystemExit as e:\n    code = e.code\n"
    f"print('LOADED ' + json.dumps([m for m in {HEAVY!r} if m in sys.modules]))\nsys.exit(code)\n"
)


def test_the_agent_verbs_on_a_terminal_load_neither_click_nor_rich(
    ledger_env: Path | str, tmp_path: Path
) -> None:
    """A person typing `add`, `start`, `done`, `next` or `show` waits for no
    import of click or rich: their replies are drawn with plain ANSI codes,
    and agent text in them is sanitised."""
    env, _ = pager_env(ledger_env, tmp_path, "cat")
    env["TERM"] = "xterm-256color"
    env.pop("NO_COLOR", None)
    probe = [sys.executable, "-c", PROBE]
    added = on_terminal_raw([*probe, "add", "Launch \x1b[2J[red]x[/red]"], env)
    assert "LOADED []" in added
    plain = SGR.sub("", added)
    assert re.search(r"^added (\w{6}) ○ pending Launch \ufffd\[2J\[red\]x\[/red\]$", plain, re.M), plain
    item = re.search(r"^added (\w{6})", plain, re.M)
    assert item is not None
    assert "\x1b[36madded " in added  # coloured, with the renderer's own codes
    for args in (["start", item[1]], ["done", item[1]], ["next"], ["show"], ["show", "--all"]):
        out = on_terminal_raw([*probe, *args], env)
        assert "LOADED []" in out, (args, out)
    assert "\x1b[2J" not in on_terminal_raw([todoledger_bin(), "show", "--all"], env)


def on_terminal_raw(args: list[str], env: dict[str, str]) -> str:
    """As `on_terminal`, colour codes kept."""
    pid, fd = pty.fork()
    if pid == 0:
        os.execve(args[0], args, env)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
    out = bytearray()
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, out.decode(errors="replace")
    return out.decode().replace("\r\n", "\n")


def test_dropped_folds_apart_from_cancelled_and_a_contested_item_stays_in_sight(
    ledger_env: Path | str, tmp_path: Path
) -> None:
    """An agent's list leaves two items out (dropped) and keeps working on one a
    person cancelled (contested): on the terminal the drops are counted apart from
    the cancel, and the contested item is drawn with the disagreement, not folded."""
    with Ledger(ledger_env) as lg:
        listed = {"todos": [{"content": "Agent's task", "status": "in_progress"}]}
        extra = [{"content": f"Left out {k}", "status": "pending"} for k in range(2)]
        lg.write({"todos": [*listed["todos"], *extra]}, writer="agent:a")
        lg.write(listed, writer="agent:a")  # the two left out: dropped
        task = next(i["id"] for i in lg.show()["items"] if i["content"] == "Agent's task")
        lg.add("Never needed", writer="cli:tester")
        gone = next(i["id"] for i in lg.show()["items"] if i["content"] == "Never needed")
        lg.cancel(gone, writer="cli:tester", reason="not needed")
        lg.cancel(task, writer="cli:tester", reason="not now")
        lg.write(listed, writer="agent:a")  # still listed as in progress: contested
    env, _ = pager_env(ledger_env, tmp_path, "cat")
    shown = on_terminal([todoledger_bin(), "show"], env)
    lines = shown.splitlines()
    (drawn,) = [line for line in lines if "Agent's task" in line]
    assert drawn.split()[1] == "✕"  # drawn, with its label (wrapped as the terminal's width says)
    assert "listed as in progress by agent:a, but cancelled by cli:tester" in " ".join(shown.split())
    assert "(2 cancelled, 2 dropped not shown: todoledger show --all)" not in lines
    assert "(1 cancelled, 2 dropped not shown: todoledger show --all)" in lines
    assert not [line for line in lines if "Left out" in line or "Never needed" in line]
    everything = on_terminal([todoledger_bin(), "show", "--all"], env).splitlines()
    assert "completed, cancelled and dropped (1 cancelled, 2 dropped):" in everything
    marks = {line.split()[5]: line.split()[1] for line in everything if "Left out" in line}
    assert marks == {"0": "⊖", "1": "⊖"}
    # `show ID` is the item in full, also on a terminal (click's path)
    assert "Agent's task" in on_terminal([todoledger_bin(), "show", task], env).splitlines()[0]
