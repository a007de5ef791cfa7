"""The benchmark's network hop: it adds its round-trip time, keeps bytes in order, carries PostgreSQL."""

from __future__ import annotations

import socket
import statistics
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from pipelines.bench.latency_proxy import LatencyProxy, upstream_address
from pipelines.resources.database import connect


@contextmanager
def echo_server() -> Iterator[str]:
    """A TCP echo server on loopback; yields a libpq-style URL naming it (the proxy only reads host and port)."""
    listener = socket.create_server(("127.0.0.1", 0))

    def serve(connection: socket.socket) -> None:
        with connection:
            while data := connection.recv(65_536):
                connection.sendall(data)

    def accept() -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=serve, args=(connection,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"host=127.0.0.1 port={listener.getsockname()[1]} dbname=echo"
    finally:
        listener.shutdown(socket.SHUT_RDWR)
        listener.close()


def _client(proxy: LatencyProxy) -> socket.socket:
    client = socket.create_connection(("127.0.0.1", proxy.port))
    client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return client


def _round_trip_ms(client: socket.socket) -> float:
    started = time.perf_counter()
    client.sendall(b"x")
    assert client.recv(16) == b"x"
    return (time.perf_counter() - started) * 1e3


def test_the_hop_adds_its_round_trip_time() -> None:
    with echo_server() as url, LatencyProxy(url, 0) as direct, LatencyProxy(url, 4) as far:
        with _client(direct) as near_client, _client(far) as far_client:
            near = statistics.median(_round_trip_ms(near_client) for _ in range(20))
            distant = statistics.median(_round_trip_ms(far_client) for _ in range(20))
    # Never less than the 4 ms asked for; the upper bound only allows for a busy machine.
    assert distant - near >= 4.0 - 0.2
    assert distant < near + 4.0 + 20.0


def test_the_hop_keeps_order_and_delays_from_arrival_not_from_the_last_send() -> None:
    messages = [f"{index:06d}".encode() for index in range(500)]
    with echo_server() as url, LatencyProxy(url, 20) as proxy, _client(proxy) as client:
        started = time.perf_counter()
        for message in messages:
            client.sendall(message)
        expected = b"".join(messages)
        received = b""
        while len(received) < len(expected):
            received += client.recv(65_536)
        elapsed_ms = (time.perf_counter() - started) * 1e3
    assert received == expected
    # 500 writes each delayed one after another would take 10 s; delayed from arrival, one round trip.
    assert elapsed_ms < 2_000


def test_postgres_answers_across_the_hop(server_url: str) -> None:
    with LatencyProxy(server_url, 1) as proxy, connect(proxy.url, autocommit=True) as connection:
        assert connection.info.host == "127.0.0.1" and connection.info.port == proxy.port
        assert connection.execute("SELECT 40 + 2").fetchone() == (42,)


def test_the_server_is_reached_where_the_url_says() -> None:
    assert upstream_address("host=/tmp/pg port=5433 dbname=x")[1] == "/tmp/pg/.s.PGSQL.5433"
    assert upstream_address("postgresql://db.internal:6543/x")[1] == ("db.internal", 6543)
    with pytest.raises(ValueError):
        LatencyProxy("host=127.0.0.1 port=1", -1)
