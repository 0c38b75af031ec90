"""A signed ledger's cost, side by side in one run (issue 29). Absolute times on a
shared machine are noise: every figure is a ratio, or a median beside its pair.

    .venv/bin/python bench/bench_signing.py            # against `git merge-base HEAD main`
    .venv/bin/python bench/bench_signing.py --base REF --runs 15

1. a signed `approve` (its passphrase through --passphrase-fd) beside an unsigned
   one (a person's registered token), each in a fresh process, on the same plan;
2. the KDF alone, with its parameters (scrypt n=2^15, r=8, p=1), and Ed25519's
   sign and verify, in this process;
3. the agents' paths (`show --json`, `next --json`, the Claude Code hook on a
   TodoWrite): this tree against BASE's `src` (extracted with `git archive`) on the
   same ledger file, each in a fresh process, alternated; the modules each loads,
   and those this tree loads that BASE did not (the target: none, and no
   `cryptography`).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PASSPHRASE = "bench passphrase"
TOKEN = "bench-person-token-0123456789"
PROBE = (
    "import json, sys\nsys.path.insert(0, sys.argv.pop(1))\nfrom todoledger.cli.entry import main\n"
    "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
    "sys.stderr.write('MODULES ' + json.dumps(sorted(sys.modules)) + '\\n')\n"
)


def run(argv: list[str], env: dict[str, str], *, stdin: str = "", fds: tuple[int, ...] = ()) -> float:
    start = time.perf_counter()
    done = subprocess.run(
        argv, env=env, input=stdin, capture_output=True, text=True, pass_fds=fds, timeout=120
    )
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv[-4:])} failed: {done.stderr.strip()[-400:]}")
    return took


def modules(src: Path, args: list[str], env: dict[str, str], stdin: str = "") -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(src), *args], env=env, input=stdin, capture_output=True, text=True
    )
    return set(json.loads(done.stderr.rsplit("MODULES ", 1)[1]))


def base_src(ref: str, into: Path) -> Path:
    blob = subprocess.run(
        ["git", "-C", str(ROOT), "archive", ref, "src"], capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=BytesIO(blob)) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default=None, help="the tree before (default: git merge-base HEAD main)")
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--items", type=int, default=1000)
    opts = parser.parse_args()
    base = (
        opts.base
        or subprocess.run(
            ["git", "-C", str(ROOT), "merge-base", "HEAD", "main"], capture_output=True, text=True, check=True
        ).stdout.strip()
    )
    sys.path.insert(0, str(ROOT / "src"))
    from todoledger import Ledger
    from todoledger.personkeys import KDF

    tmp = Path(tempfile.mkdtemp(prefix="bench-signing-"))
    try:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("TODOLEDGER_", "CLAUDE", "CODEX", "GEMINI"))
        }
        env |= {"XDG_CONFIG_HOME": str(tmp / "config"), "XDG_STATE_HOME": str(tmp / "state")}
        env.pop("OPENCODE", None)
        bin_ = str(ROOT / ".venv" / "bin" / "todoledger")

        # 1. signed approve beside unsigned, fresh processes, alternated
        plain, signed = tmp / "plain.db", tmp / "signed.db"
        item: dict[Path, str] = {}
        for db in (plain, signed):
            with Ledger(db) as lg:
                item[db] = lg.add("Deploy to production", needs_approval=True, writer="claude-code:s1")["id"]
                lg.add_token("ann", token=TOKEN, writer="cli:ann")
        typed = tmp / "typed"
        typed.write_text(f"{PASSPHRASE}\n{signed.name}\n")  # the ledger's name: it has agents' history
        with open(typed, "rb") as fh:
            run(
                [bin_, "person", "init", "ann", "--passphrase-fd", str(fh.fileno())],
                env | {"TODOLEDGER_DB": str(signed), "TODOLEDGER_TOKEN": TOKEN},  # only a person registers it
                fds=(fh.fileno(),),
            )
        times: dict[str, list[float]] = {"unsigned": [], "signed": []}
        for _ in range(opts.runs):
            times["unsigned"].append(
                run(
                    [bin_, "approve", item[plain]],
                    env | {"TODOLEDGER_DB": str(plain), "TODOLEDGER_TOKEN": TOKEN},
                )
            )
            with open(typed, "rb") as fh:
                times["signed"].append(
                    run(
                        [bin_, "approve", item[signed], "--passphrase-fd", str(fh.fileno())],
                        env | {"TODOLEDGER_DB": str(signed)},
                        fds=(fh.fileno(),),
                    )
                )
        unsigned_ms, signed_ms = (statistics.median(times[k]) * 1000 for k in ("unsigned", "signed"))
        print(f"approve, fresh process, median of {opts.runs}:")
        print(f"  unsigned (a person's token)            {unsigned_ms:8.1f} ms")
        print(
            f"  signed (--passphrase-fd, scrypt+Ed25519) {signed_ms:6.1f} ms   ratio {signed_ms / unsigned_ms:.2f}x"
        )

        # 2. the KDF alone, and the signature
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
        from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

        kdf_s = []
        for _ in range(5):
            start = time.perf_counter()
            Scrypt(salt=os.urandom(16), length=32, n=KDF["n"], r=KDF["r"], p=KDF["p"]).derive(
                PASSPHRASE.encode()
            )
            kdf_s.append(time.perf_counter() - start)
        key = Ed25519PrivateKey.generate()
        message = b"x" * 300
        start = time.perf_counter()
        for _ in range(1000):
            sig = key.sign(message)
        sign_us = (time.perf_counter() - start) * 1000
        public = key.public_key()
        start = time.perf_counter()
        for _ in range(1000):
            public.verify(sig, message)
        verify_us = (time.perf_counter() - start) * 1000
        n_exp = KDF["n"].bit_length() - 1
        memory = 128 * KDF["r"] * KDF["n"] // 2**20
        print(
            f"KDF scrypt n=2^{n_exp}, r={KDF['r']}, p={KDF['p']} ({memory} MiB):"
            f" {statistics.median(kdf_s) * 1000:.1f} ms median of 5 (once a signed action)"
        )
        print(f"Ed25519: sign {sign_us:.1f} us, verify {verify_us:.1f} us (each, mean of 1000)")

        # 3. the agents' paths, before and after, on one ledger file
        old = base_src(base, tmp / "base")
        new = ROOT / "src"
        import compileall

        for tree in (old, new):  # both with their bytecode: an uncompiled tree would pay for compiling
            compileall.compile_dir(str(tree), quiet=1)
        agents_db = tmp / "agents.db"
        with Ledger(agents_db) as lg, lg.batch():
            for n in range(opts.items):
                lg.add(f"item {n}", writer="claude-code:s1")
        hook_event = json.dumps(
            {
                "hook_event_name": "PostToolUse",
                "tool_name": "TodoWrite",
                "session_id": "s1",
                "cwd": str(tmp),
                "tool_input": {
                    "todos": [{"content": "item 1", "status": "in_progress", "activeForm": "Doing 1"}]
                },
            }
        )
        cases = {
            "show --json": (["show", "--json"], ""),
            "next --json": (["next", "--json"], ""),
            "hook claude-code": (["hook", "claude-code"], hook_event),
        }
        agent_env = env | {"TODOLEDGER_DB": str(agents_db), "CLAUDECODE": "1", "CLAUDE_CODE_SESSION_ID": "s1"}
        print(
            f"agents' paths on {opts.items} items, fresh process each, median of {opts.runs} (before: {base[:10]}):"
        )
        for name, (args, stdin) in cases.items():
            got: dict[str, list[float]] = {"before": [], "after": []}
            for n in range(opts.runs + 1):
                for label, src in (("before", old), ("after", new)):
                    if n == 0:  # a warm-up of each: the files in the page cache
                        run([sys.executable, "-c", PROBE, str(src), *args], agent_env, stdin=stdin)
                        continue
                    argv = [sys.executable, "-c", PROBE, str(src), *args]
                    got[label].append(run(argv, agent_env, stdin=stdin))
            before_ms, after_ms = (statistics.median(got[k]) * 1000 for k in ("before", "after"))
            loaded_old = modules(old, args, agent_env, stdin)
            loaded_new = modules(new, args, agent_env, stdin)
            extra = sorted(loaded_new - loaded_old)
            crypto = any(m.split(".")[0] == "cryptography" for m in loaded_new)
            print(
                f"  {name:18} before {before_ms:7.1f} ms  after {after_ms:7.1f} ms  ratio {after_ms / before_ms:.2f}x;"
                f" modules {len(loaded_old)} -> {len(loaded_new)}, new: {', '.join(extra) or 'none'};"
                f" cryptography loaded: {'yes' if crypto else 'no'}"
            )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
