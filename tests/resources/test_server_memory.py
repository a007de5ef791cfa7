"""The embedded server's memory: shared_buffers a quarter of the machine's RAM (128 MB to 8 GB),
effective_cache_size half of it, in force on the real server."""

from __future__ import annotations

import os

import psutil
import psycopg
import pytest

from pipelines.resources.server_memory import machine_memory_bytes, memory_settings

MB = 1024 * 1024
GB = 1024 * MB


@pytest.mark.parametrize(
    "memory, shared_buffers, effective_cache_size",
    [
        (24 * GB, "6144MB", "12288MB"),
        (4 * GB, "1024MB", "2048MB"),
        (1 * GB, "256MB", "512MB"),
        # A small CI machine keeps initdb's own 128 MB.
        (512 * MB, "128MB", "256MB"),
        (256 * MB, "128MB", "128MB"),
        # A large one stops at 8 GB and leaves the rest to the operating system's cache.
        (64 * GB, "8192MB", "32768MB"),
    ],
)
def test_memory_settings_follow_the_machine(memory, shared_buffers, effective_cache_size):
    assert memory_settings(memory) == {"shared_buffers": shared_buffers, "effective_cache_size": effective_cache_size}


def test_a_memory_size_must_be_positive():
    with pytest.raises(ValueError, match="memory size must be positive"):
        memory_settings(0)


def test_machine_memory_is_at_most_the_machines_ram():
    assert 0 < machine_memory_bytes() <= psutil.virtual_memory().total


@pytest.mark.skipif(bool(os.environ.get("DATABASE_URL")), reason="sizes the embedded server")
def test_the_embedded_server_runs_with_the_sized_settings(server_url):
    wanted = memory_settings(machine_memory_bytes())
    with psycopg.connect(server_url) as connection:
        in_force = connection.execute(
            "SELECT pg_size_bytes(current_setting('shared_buffers')), pg_size_bytes(current_setting('effective_cache_size')),"
            " pg_size_bytes(%s), pg_size_bytes(%s)",
            (wanted["shared_buffers"], wanted["effective_cache_size"]),
        ).fetchone()
    assert in_force[:2] == in_force[2:]
