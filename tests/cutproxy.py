"""A TCP proxy in front of a PostgreSQL server that, once armed, cuts the
connection right after the server has said COMMIT and before the client hears
it: the commit has landed, the reply is lost (issue 30: a retry must find the
write's idempotency key and apply nothing). Real bytes, a real server; only the
reply is withheld, as a server restart or a broken network would."""

from __future__ import annotations

import select
import socket
import threading

# The server's CommandComplete for a COMMIT: 'C', its length (4 + 7), "COMMIT\0".
COMMIT_DONE = b"C\x00\x00\x00\x0bCOMMIT\x00"


class CutProxy:
    def __init__(self, server_port: int) -> None:
        self.server_port = server_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.armed = threading.Event()
        self.cuts = 0
        self._stop = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        self.listener.settimeout(0.2)
        while not self._stop.is_set():
            try:
                client, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.server_port))
            threading.Thread(target=self._pump, args=(client, server), daemon=True).start()

    def _pump(self, client: socket.socket, server: socket.socket) -> None:
        try:
            while not self._stop.is_set():
                ready, _, _ = select.select([client, server], [], [], 0.2)
                for side in ready:
                    data = side.recv(65536)
                    if not data:
                        return
                    if side is server and self.armed.is_set() and COMMIT_DONE in data:
                        self.armed.clear()  # once: the retry goes through
                        self.cuts += 1
                        return  # the reply withheld, both ends closed
                    (client if side is server else server).sendall(data)
        except OSError:
            return
        finally:
            client.close()
            server.close()

    def close(self) -> None:
        self._stop.set()
        self.listener.close()
