"""Who writes and which plan, when nobody says: TODOLEDGER_WRITER (else
`cli:<user>`) and TODOLEDGER_PLAN (else `main`). Every layer above the store
asks here, so the service and its companions (verification, sweeps) agree."""

from __future__ import annotations

import os

from todoledger.core.model import DEFAULT_PLAN


def default_writer() -> str:
    env = os.environ.get("TODOLEDGER_WRITER")
    if env:
        return env
    # What getpass.getuser() does, without importing getpass (termios, warnings: start-up
    # every call would pay, see bench/bench_core.py).
    for name in ("LOGNAME", "USER", "LNAME", "USERNAME"):
        user = os.environ.get(name)
        if user:
            return f"cli:{user}"
    try:
        import pwd

        return f"cli:{pwd.getpwuid(os.getuid()).pw_name}"
    except ImportError:  # no password database here (Windows): getpass knows what else to ask
        pass
    except KeyError:
        return "cli"
    import getpass

    try:
        return f"cli:{getpass.getuser()}"
    except Exception:  # getpass raises a bare KeyError/OSError without a passwd entry
        return "cli"


def default_plan() -> str:
    return os.environ.get("TODOLEDGER_PLAN") or DEFAULT_PLAN
