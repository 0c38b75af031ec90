"""The file system says no: a read-only mount, a full disk, a damaged file.
Real mounts in a private mount namespace (`unshare -m`), so
the kernel refuses the writes even for root, and nothing leaks to the host."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from tests.conftest import subprocess_env, todoledger_bin
from todoledger.ledger import Ledger


def _private_mounts() -> str | None:
    """Why real mounts cannot be made here, or None when they can."""
    if shutil.which("unshare") is None:
        return "unshare (util-linux) is not installed"
    probe = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"],
        capture_output=True,
        text=True,
    )
    return None if probe.returncode == 0 else f"cannot mount in a private namespace: {probe.stderr.strip()}"


NO_MOUNTS = _private_mounts()
needs_mounts = pytest.mark.skipif(NO_MOUNTS is not None, reason=NO_MOUNTS or "")


def in_namespace(tmp_path: Path, script: str) -> dict[str, tuple[int, str, str]]:
    """Run `script` (sh) in a private mount namespace with `$M` a fresh tmpfs;
    `run NAME cmd...` records a command's exit code, stdout and stderr."""
    out = tmp_path / "out"
    out.mkdir()
    mount = tmp_path / "mnt"
    mount.mkdir()
    prelude = f"""set -e
M={mount}
run() {{ name=$1; shift; set +e; "$@" >{out}/$name.out 2>{out}/$name.err; echo $? >{out}/$name.rc; set -e; }}
"""
    proc = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", prelude + script],
        capture_output=True,
        text=True,
        env=subprocess_env(mount / ".todoledger" / "ledger.db", T=todoledger_bin()),
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return {
        rc.stem: (
            int(rc.read_text()),
            (out / f"{rc.stem}.out").read_text(),
            (out / f"{rc.stem}.err").read_text(),
        )
        for rc in out.glob("*.rc")
    }


@needs_mounts
def test_a_ledger_on_a_read_only_file_system_reads_and_refuses_writes(tmp_path: Path) -> None:
    got = in_namespace(
        tmp_path,
        """
mount -t tmpfs -o size=4m tmpfs $M
$T add "Read me later" >/dev/null
$T add "And me" >/dev/null
mount -o remount,ro $M
run show $T show --json
run next $T next
run add $T add "Not written"
run hook sh -c 'echo "{}" | $T hook claude-code'
run check $T check
""",
    )
    rc, out, err = got["show"]
    assert rc == 0, err
    assert [i["content"] for i in json.loads(out)["items"]] == ["Read me later", "And me"]
    assert got["next"][0] == 0 and "Read me later" in got["next"][1]
    rc, out, err = got["add"]
    assert rc == 1 and err.strip().endswith("read-only file system: nothing was written"), err
    assert "Traceback" not in err and err.count("\n") == 1
    assert got["check"][0] == 0, got["check"]
    assert got["hook"][0] == 0  # hooks never break the agent


@needs_mounts
def test_a_full_disk_is_said_and_nothing_is_written(tmp_path: Path) -> None:
    big = {"todos": [{"content": f"Item {j} " + "p" * 900, "status": "pending"} for j in range(150)]}
    (tmp_path / "big.json").write_text(json.dumps(big))
    got = in_namespace(
        tmp_path,
        f"""
mount -t tmpfs -o size=400k tmpfs $M
$T add "First" >/dev/null
run write $T write --plan big {tmp_path / "big.json"}
run show $T show --json --plan big
run check $T check
""",
    )
    rc, _, err = got["write"]
    assert rc == 1 and err.strip().endswith("disk full: nothing was written"), err
    assert "Traceback" not in err and "internal error" not in err
    assert json.loads(got["show"][1])["items"] == []
    assert got["check"][0] == 0, got["check"]


def _damaged_ledger(db: Path, *, index: str) -> None:
    """A ledger whose `index` (a b-tree of the items table `next` reads) is overwritten."""
    with Ledger(db) as lg:
        for n in range(60):
            lg.add(f"Task number {n} " + "x" * 200)
    with sqlite3.connect(db) as con:
        (root,) = con.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (index,)).fetchone()
    con.close()
    with db.open("r+b") as fh:  # the file closed cleanly: everything is in the main file
        fh.seek(4096 * (root - 1) + 100)
        fh.write(b"\xde\xad" * 1000)


def _run(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [todoledger_bin(), *args], capture_output=True, text=True, env=subprocess_env(db), timeout=60
    )


def test_a_damaged_ledger_is_reported_by_check_and_said_by_readers(tmp_path: Path) -> None:
    db = tmp_path / "damaged.db"
    _damaged_ledger(db, index="items_ready")  # the index the ready query reads
    check = _run(db, "check", "--json")
    assert check.returncode == 1 and "Traceback" not in check.stderr, check.stderr
    report = json.loads(check.stdout)
    assert report["ok"] is False and report["damage"] and "damaged" in report["integrity"]
    text = _run(db, "check")
    assert text.returncode == 1 and "integrity: the ledger file is damaged" in text.stdout, text.stderr
    nxt = _run(db, "next")
    assert nxt.returncode == 1
    assert nxt.stderr.strip().endswith("the ledger file is damaged: run `todoledger check`"), nxt.stderr
