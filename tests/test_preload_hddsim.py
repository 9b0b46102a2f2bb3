"""Prefetching seen from the disk: on an hddsim mount (small kernel
readahead), a reader that visits a few places of a video makes the
emulated disk read whole prefetch windows under the library, through the
real daemon or in-process, and only small pieces without it.  The bytes
the reader gets are the video's, as common/content.h defines them."""
import os
import sys

import pytest

from fixtures_hddsim import content_bytes, write_library
from fixtures_preload import lib_env, plain_env, run

MIB = 1 << 20
VIDEO = ("v.mp4", 17 * MIB + 555, 419430, 0)
# 3 MiB apart: a 2 MiB window plus the kernel's small async readahead
# behind it never reaches the next place, which must miss on its own.
PLACES = [k * 3 * MIB for k in range(5)]

READER = r'''
import os, sys, hashlib
fd = os.open(sys.argv[1], os.O_RDONLY)
h = hashlib.sha256()
for place in map(int, sys.argv[2:]):
    for i in range(16):                      # 64 KiB in 4 KiB preads
        h.update(os.pread(fd, 4096, place + i * 4096))
print(h.hexdigest())
'''


def disk_bytes(trace):
    total = 0
    with open(trace, encoding="ascii") as f:
        for line in f:
            if not line.startswith("#") and line.split()[-1] != "meta":
                total += int(line.split()[2])
    return total


def expected_digest():
    import hashlib
    h = hashlib.sha256()
    for place in PLACES:
        h.update(content_bytes(VIDEO[0], place, 65536))
    return h.hexdigest()


@pytest.mark.parametrize("setup", ["none", "prefetch", "daemon"])
def test_disk_sees_prefetch_windows(preload_built, scratch, hddsim_mount, make_daemon, setup):
    lib = write_library(scratch / "one.lcvl", [VIDEO])
    trace = scratch / "trace.txt"
    m = hddsim_mount(lib, trace=trace, read_ahead_kb=128)
    path = os.path.join(m.path, VIDEO[0])
    if setup == "none":
        env = plain_env()
    elif setup == "prefetch":
        env = lib_env("prefetch")
    else:
        env = make_daemon().env(LIBCEPTION_MODE="prefetch+serialize")
    code, out, err = run([sys.executable, "-c", READER, path] + [str(p) for p in PLACES], env)
    m.unmount()
    assert code == 0, err
    assert out.decode().strip() == expected_digest()
    read = disk_bytes(trace)
    if setup == "none":
        # the kernel alone: each place costs its 64 KiB and a small window
        assert read < len(PLACES) * MIB
    else:
        # one 2 MiB window per place
        assert read >= len(PLACES) * 2 * MIB
