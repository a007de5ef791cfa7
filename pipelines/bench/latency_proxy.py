"""A network hop for the benchmark: a TCP proxy on 127.0.0.1 that delays every chunk of bytes by
half a round-trip time in each direction, so the database looks as far away as it is in a
deployment (0.3 to 1 ms inside a zone, 1 to 2 ms across zones).

Each direction of each connection has a reader, which stamps every chunk it receives with the time
it is due, and a writer, which sends the chunks in the order they came once they are due: bytes
keep their order, and a chunk waits its half round trip from when it arrived, not from when the
one before it left (latency, not bandwidth, as on a real link). The reader and writer are threads
sleeping with `time.sleep`, which sleeps to a few tens of microseconds: an asyncio event loop on
Linux waits in epoll, whose timeouts are whole milliseconds, so it would turn a 0.25 ms half
round trip into 1 ms.

    with LatencyProxy(url, rtt_ms=1.0) as proxy:
        psycopg.connect(proxy.url)
"""

from __future__ import annotations

import os
import queue
import socket
import threading
import time
from types import TracebackType

import psycopg

_CHUNK_BYTES = 65_536
_END = b""


def upstream_address(url: str) -> tuple[int, str | tuple[str, int]]:
    """(address family, address) of the server a libpq connection string names: its Unix socket
    when the host is a directory (or absent), else host and port over TCP."""
    target = psycopg.conninfo.conninfo_to_dict(url)
    host = str(target.get("host") or "/var/run/postgresql").split(",")[0]
    port = int(str(target.get("port") or 5432).split(",")[0])
    if host.startswith("/"):
        return socket.AF_UNIX, os.path.join(host, f".s.PGSQL.{port}")
    return socket.AF_INET, (host, port)


class LatencyProxy:
    """Forwards 127.0.0.1:`port` to the server of `url`, `rtt_ms` / 2 each way; `url` is the
    same connection string pointed at the proxy."""

    def __init__(self, url: str, rtt_ms: float) -> None:
        if rtt_ms < 0:
            raise ValueError("a round-trip time cannot be negative")
        self.delay_seconds = rtt_ms / 2000
        self.rtt_ms = rtt_ms
        self._family, self._upstream = upstream_address(url)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        target = psycopg.conninfo.conninfo_to_dict(url)
        target.pop("hostaddr", None)
        self.url = psycopg.conninfo.make_conninfo("", **{**target, "host": "127.0.0.1", "port": str(self.port)})
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._closed = False
        self._acceptor = threading.Thread(target=self._accept, name="latency-proxy", daemon=True)

    def __enter__(self) -> LatencyProxy:
        self._acceptor.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            sockets, self._sockets = self._sockets, []
        # shutdown() wakes a thread blocked in accept() or recv() on Linux; close() alone does not.
        for sock in (self._listener, *sockets):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()
        self._acceptor.join(timeout=5)

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                server = socket.socket(self._family, socket.SOCK_STREAM)
                server.connect(self._upstream)
            except OSError:
                client.close()
                continue
            for sock in (client, server):
                if sock.family == socket.AF_INET:
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                if self._closed:
                    client.close()
                    server.close()
                    return
                self._sockets += [client, server]
            for source, target in ((client, server), (server, client)):
                self._pipe(source, target)

    def _pipe(self, source: socket.socket, target: socket.socket) -> None:
        """Carry `source`'s bytes to `target`, each chunk `delay_seconds` after it arrived."""
        due: queue.SimpleQueue[tuple[float, bytes]] = queue.SimpleQueue()

        def read() -> None:
            while True:
                try:
                    data = source.recv(_CHUNK_BYTES)
                except OSError:
                    data = _END
                due.put((time.perf_counter() + self.delay_seconds, data))
                if data == _END:
                    return

        def write() -> None:
            while True:
                deadline, data = due.get()
                wait = deadline - time.perf_counter()
                if wait > 0:
                    time.sleep(wait)
                try:
                    if data == _END:
                        target.shutdown(socket.SHUT_WR)
                        return
                    target.sendall(data)
                except OSError:
                    return

        for work in (read, write):
            threading.Thread(target=work, name="latency-proxy-pipe", daemon=True).start()
