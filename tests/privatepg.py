"""A throwaway PostgreSQL cluster of a test's own (initdb, pg_ctl under a temporary
folder, run as the postgres user when the tests run as root), on a free loopback
port, trust auth: a test may stop and restart it without touching the machine's
shared server."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

BIN = sorted(glob.glob("/usr/lib/postgresql/*/bin"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PrivatePG:
    def __init__(self, tmp_path: Path) -> None:
        if not BIN or not os.path.exists(os.path.join(BIN[-1], "initdb")):
            pytest.skip("PostgreSQL's server binaries are not installed (initdb, pg_ctl)")
        self.bin = BIN[-1]
        # A folder of its own under /tmp (pytest's are private to root): the postgres user works in it.
        self.folder = Path(tempfile.mkdtemp(prefix="todoledger-privatepg-"))
        self.folder.chmod(0o755)
        self.data = self.folder / "data"
        self.port = _free_port()
        self.as_user: list[str] = []
        if os.geteuid() == 0:  # PostgreSQL refuses to run as root
            shutil.chown(self.folder, "postgres")
            self.as_user = ["runuser", "-u", "postgres", "--"]
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync")
        self.start()
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, tool: str, *args: str) -> None:
        done = subprocess.run(
            [*self.as_user, os.path.join(self.bin, tool), *args],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=self.folder,
        )
        if done.returncode != 0:
            pytest.fail(f"{tool} failed: {done.stdout[-1000:]} {done.stderr[-1000:]}")

    def _ctl(self, *args: str) -> None:
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories= -c fsync=off"
        self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.folder / "log"), "-w", *args)

    def start(self) -> None:
        self._ctl("start")

    def restart(self) -> None:
        self._ctl("restart", "-m", "fast")

    def stop_server(self) -> None:
        """Stopped, its folder kept: `start` brings it back with its data."""
        self._ctl("stop", "-m", "fast")

    def freeze(self) -> list[int]:
        """Every process of the cluster stopped (SIGSTOP): it accepts connections
        (the kernel does) and answers nothing. `thaw` takes the list back."""
        postmaster = int((self.data / "postmaster.pid").read_text().split()[0])
        children = subprocess.run(["pgrep", "-P", str(postmaster)], capture_output=True, text=True)
        pids = [postmaster, *(int(p) for p in children.stdout.split())]
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
        return pids

    def thaw(self, pids: list[int]) -> None:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)

    def stop(self) -> None:
        options = ["-D", str(self.data), "-m", "immediate"]
        subprocess.run(
            [*self.as_user, os.path.join(self.bin, "pg_ctl"), "stop", *options], capture_output=True
        )
        shutil.rmtree(self.folder, ignore_errors=True)
