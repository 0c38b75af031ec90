"""A leftover on purpose: a process outside the server's process group that holds
GPU memory (or, without a GPU, only runs), as the seeds' zombie GPU processes did.
It writes its pid to the marker file, and ends by itself after 20 minutes at most."""

import os
import sys
import time

marker, device = sys.argv[1], sys.argv[2]
held = None
if device == "cuda":
    import torch

    held = torch.empty(256 * 1024 * 1024, dtype=torch.float32, device="cuda")  # 1 GiB
with open(marker, "w") as fh:
    fh.write(str(os.getpid()))
time.sleep(20 * 60)
