"""SIGTERM to a `lanegraph serve` process: requests already accepted finish, new connections are
refused, then it exits."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

import httpx
import pytest

from pipelines.serve.bench import free_port, measure_serve, render_serve
from tests import REPOSITORY
from tests.serve.conftest import Served


def test_sigterm_lets_accepted_requests_finish(served: Served) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [sys.executable, "-m", "pipelines.cli", "serve", "--port", str(port)], cwd=str(REPOSITORY),
        env={**os.environ, "DATABASE_URL": served.database.url}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{url}/ready", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.5)
        # Requests the server has begun reading (headers and half a body sent) when the signal comes:
        # accepted, so they must be answered whole.
        body = json.dumps({"question": "What is the status of Atlas?"}).encode()
        head = (
            f"POST /find HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {served.tenant_a}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        ).encode()
        clients = [socket.create_connection(("127.0.0.1", port), timeout=120) for _ in range(3)]
        for client in clients:
            client.sendall(head + body[:10])
        time.sleep(2)
        server.send_signal(signal.SIGTERM)
        time.sleep(1)
        with pytest.raises(httpx.TransportError):
            httpx.get(f"{url}/health", timeout=5)
        answers = []
        for client in clients:
            client.sendall(body[10:])
            answers.append(_read_response(client))
            client.close()
        assert all(answer.startswith(b"HTTP/1.1 200") for answer in answers), answers
        assert all(b'"evidence"' in answer for answer in answers)
        # uvicorn shuts down gracefully, then re-raises the signal it caught, as the exit status says.
        assert server.wait(timeout=120) in (0, -signal.SIGTERM)
    finally:
        if server.poll() is None:
            server.kill()


def _read_response(client: socket.socket) -> bytes:
    received = b""
    while chunk := client.recv(65536):
        received += chunk
        head, _, rest = received.partition(b"\r\n\r\n")
        length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")), None)
        if length is not None and len(rest) >= length:
            break
    return received


def test_the_load_benchmark_loses_no_request_in_flight_at_sigterm(served: Served, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABASE_URL", served.database.url)
    report = measure_serve(
        ["What is the status of Atlas?", "Who leads Project Heron?"], clients=4, seconds=30, scopes=None,
        in_process_calls=2, progress=lambda message: None, sigterm_after=3,
    )
    shutdown = report["sigterm"]
    assert shutdown.get("in flight, lost", 0) == 0, shutdown
    assert shutdown.get("in flight, answered", 0) >= 1, shutdown
    assert report["http"]["requests"] > 0 and report["http"]["errors"] == {}
    assert "SIGTERM 3 s in" in render_serve(report)
