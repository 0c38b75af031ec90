"""One configuration's server: the decoder with `--k` draft tokens a round (0: no
speculation), over local HTTP, as SGLang is in the seeds. A sweep's `--setup`.

    GET /health    "ok" once the model is built and warmed up (503 before)
    GET /generate  one timed greedy generation: {"tok_s", "accept_len", "k", ...} as JSON

--leftover-once-in DIR: the first server started with it (while DIR/leftover.pid
does not exist) starts a process that holds GPU memory in a session of its own,
outside this server's process group, and writes its pid there: a leftover on
purpose, which ending the server's group does not end and the sweep's clean
check must catch. (A folder, not a file: a sweep's run depends on the files its
commands name, and this marker is no input of the measurement.)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--k", type=int, required=True)
    ap.add_argument("--size", default="1b")
    ap.add_argument("--tokens", type=int, default=256, help="new tokens per /generate")
    ap.add_argument("--leftover-once-in", default=None)
    args = ap.parse_args()
    state: dict[str, object] = {"ready": False}
    lock = threading.Lock()  # one generation at a time: the KV cache is one

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/health":
                ready = bool(state["ready"])
                self._send(200 if ready else 503, b"ok\n" if ready else b"loading\n", "text/plain")
            elif self.path.startswith("/generate") and state["ready"]:
                with lock:
                    _, stats = model.generate(prompt, args.tokens, args.k)
                answer = {
                    "k": args.k,
                    "tokens": args.tokens,
                    **{n: round(v, 4) for n, v in stats.items()},
                    "device": state["device"],
                    "matches_greedy": state["matches_greedy"],
                    "pid": os.getpid(),
                }
                self._send(200, json.dumps(answer).encode(), "application/json")
            else:
                self._send(404, b"not found\n", "text/plain")

        def _send(self, status: int, body: bytes, kind: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a: object) -> None:
            pass

    # Listen at once (answering 503) so the sweep's ready check sees a server that is loading.
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"server k={args.k} pid {os.getpid()}: loading torch", flush=True)

    import torch
    from model import SHAPES, Decoder, matches_greedy  # type: ignore[import-not-found]

    device = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    shape = SHAPES[args.size]
    model = Decoder(shape, device, dtype, max_len=64 + args.tokens + args.k + 8, seed=0)
    g = torch.Generator(device="cpu").manual_seed(1)
    prompt = torch.randint(0, shape.vocab, (32,), generator=g).to(device)
    state["device"] = torch.cuda.get_device_name() if device == "cuda" else "cpu"
    print(
        f"server k={args.k}: {shape.parameters() / 1e9:.2f}B parameters ({args.size}),"
        f" draft = first {shape.draft_layers} layers, on {state['device']}",
        flush=True,
    )
    state["matches_greedy"] = matches_greedy(model, prompt, args.k) if args.k else True
    model.generate(prompt, 16, args.k)  # warm up this configuration's kernels
    marker = os.path.join(args.leftover_once_in, "leftover.pid") if args.leftover_once_in else None
    if marker and not os.path.exists(marker):
        open(marker, "w").close()  # taken: only the first server leaves one
        leftover = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "leftover.py"), marker, device],
            start_new_session=True,  # outside this server's process group: a teardown of the group misses it
            stdin=subprocess.DEVNULL,
        )
        print(f"server k={args.k}: started a leftover on purpose, pid {leftover.pid}", flush=True)
    state["ready"] = True
    print(f"server k={args.k}: ready on 127.0.0.1:{args.port}", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
