"""A stand-in for `nvidia-smi --query-compute-apps` where there is no nvidia-smi
(a CPU check of the runner): the processes of this benchmark (its servers and its
leftover) still alive. Exit 1 and one line naming them when there are any.

    python3 bench/gpu_sweep/leftovers.py [WORD ...]

With WORDs (a runner's port, its folder), only the processes whose command line
holds one of them count: another runner of this benchmark on the same machine
(a test beside this one) is not this runner's leftover."""

import os
import sys

mine = os.getpid()
words_of_ours = sys.argv[1:]
found = []
for name in os.listdir("/proc"):
    if not name.isdigit() or int(name) == mine:
        continue
    try:
        with open(f"/proc/{name}/cmdline", "rb") as fh:
            words = [w.decode("utf-8", "replace") for w in fh.read().split(b"\0") if w]
        with open(f"/proc/{name}/stat") as fh:
            state = fh.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        continue
    if (
        state not in ("Z", "X")
        and any(w.endswith(("gpu_sweep/server.py", "gpu_sweep/leftover.py")) for w in words)
        and (not words_of_ours or any(o in w for o in words_of_ours for w in words))
    ):
        found.append(f"{name}, {os.path.basename(words[1])}")
if found:
    print("left (no nvidia-smi here: this benchmark's processes):", "; ".join(found))
    sys.exit(1)
print("nothing of this benchmark is running")
