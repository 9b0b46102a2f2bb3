"""Fixtures for hddsim tests: small libraries, mounts that always unmount,
and the reference content of common/content.h in Python."""
import os
import struct

import pytest

from fixtures_common import write_library  # noqa: F401 - tests import it from here
from libception import hddsim

M64 = (1 << 64) - 1


def _mix(x):
    x = (x + 0x9e3779b97f4a7c15) & M64
    x = ((x ^ (x >> 30)) * 0xbf58476d1ce4e5b9) & M64
    x = ((x ^ (x >> 27)) * 0x94d049bb133111eb) & M64
    return x ^ (x >> 31)


def content_seed(name):
    h = 0xcbf29ce484222325
    for b in name.encode():
        h = ((h ^ b) * 0x100000001b3) & M64
    return h


def content_bytes(name, off, n):
    """Bytes [off, off+n) of video `name`, as common/content.h defines them."""
    seed = content_seed(name)
    w0, w1 = off >> 3, (off + n + 7) >> 3
    words = struct.pack(f"<{w1 - w0}Q", *(_mix((seed + w) & M64) for w in range(w0, w1)))
    return words[off - (w0 << 3): off - (w0 << 3) + n]


# name, bytes, bitrate, chunk: one unchunked, one in 2 MiB and one in 0.5 MiB chunks
SMALL_LIBRARY = [
    ("sd/v00000.mp4", 3 * 1048576 + 12345, 419430, 0),
    ("sd/v00001.mp4", 5 * 1048576 + 4096, 419430, 2097152),
    ("hd/v00002.mp4", 1048576 + 77, 2097150, 524288),
]


def expected_files(library):
    """{path in mount: (video name, offset in video, size)} for a library."""
    out = {}
    for name, size, _rate, chunk in library:
        if not chunk:
            out[name] = (name, 0, size)
            continue
        for k in range((size + chunk - 1) // chunk):
            out[f"{name}/{k:06d}"] = (name, k * chunk, min(chunk, size - k * chunk))
    return out


@pytest.fixture
def small_library(scratch):
    return write_library(scratch / "small.lcvl", SMALL_LIBRARY)


@pytest.fixture
def hddsim_mount(scratch):
    """Factory: hddsim_mount(library, **Mount options) -> a mounted Mount,
    unmounted after the test whatever happens."""
    if not os.path.exists("/dev/fuse"):
        pytest.skip("no /dev/fuse")
    mounts = []

    def make(library, name="mnt", **kw):
        m = hddsim.Mount(scratch / name, library=library, **kw)
        mounts.append(m)
        return m

    yield make
    for m in mounts:
        m.unmount()
