"""The sweep's run: one timed generation from the configuration's server, its answer
as one JSON line (the sweep reads `$.tok_s`, `$.accept_len` and `$.k` from it)."""

import json
import sys
import urllib.request

port = int(sys.argv[1])
with urllib.request.urlopen(f"http://127.0.0.1:{port}/generate", timeout=300) as answer:
    print(json.dumps(json.load(answer)))
