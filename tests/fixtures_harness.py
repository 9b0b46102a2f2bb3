"""Fixtures for the benchmark harness tests: a docroot of files that
www-data can read, free ports, and memory cgroups removed even when a
test fails."""
import os
import socket

import pytest

from libception import cgroup


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def harness_port():
    return _free_port()


@pytest.fixture
def harness_docroot(scratch):
    """A docroot with a few files of pseudo-random bytes (1 byte to 3 MiB)."""
    root = scratch / "docroot"
    root.mkdir()
    os.chmod(root, 0o755)
    files = {}
    rnd = __import__("random").Random(5)
    for name, size in (("one.bin", 1), ("small.bin", 4096), ("video.mp4", 3 * 2**20 + 17)):
        data = rnd.randbytes(size)
        (root / name).write_bytes(data)
        os.chmod(root / name, 0o644)
        files[name] = data
    return root, files


@pytest.fixture
def harness_cgroup():
    """A factory of memory groups named after the test, all destroyed at
    teardown."""
    made = []

    def make(limit_bytes=None, suffix=""):
        g = cgroup.MemoryGroup(f"test-harness-{os.getpid()}-{len(made)}{suffix}", limit_bytes)
        made.append(g)
        return g.create()

    yield make
    for g in reversed(made):
        g.destroy()
