#!/usr/bin/env python3
"""Does FUSE drop WILLNEED read-ahead while its background queue is congested?

    python3 scripts/fuse_congestion.py DIR idle|congested

DIR holds 80 or more files of at least 8 MiB on a FUSE mount (an hddsim
library's directory, dropped from the page cache first: `echo 3 >
/proc/sys/vm/drop_caches`).  The first file is read 2 MiB sequentially,
which ramps its open file's read-ahead state, as a program's sequential
reads ramp the program's; "congested" then hints 1 MiB of each of 79
other files, 8 requests each, far past the mount's congestion threshold.
Then 1 MiB is hinted (WILLNEED, 128 KiB a call, as receptiond hints) through
the ramped file, through a fresh open of the same file, and through a
reopen via /proc/self/fd with POSIX_FADV_RANDOM (what receptiond's
rd_reopen does), and the pages the page cache then holds are counted
(cachestat; pages being read count).  On hddsim, 2026-11-26: idle 256 of
256 each; congested 0 through the ramped file in 11 of 14 trials (256 in
the others, the first after a fresh mount among them), 256 through both
others every time.
"""
import ctypes
import os
import sys

KIB = 1024
libc = ctypes.CDLL(None, use_errno=True)


class Range(ctypes.Structure):
    _fields_ = [("off", ctypes.c_uint64), ("len", ctypes.c_uint64)]


class Cachestat(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint64) for n in ("cache", "dirty", "writeback", "evicted",
                                                "recently_evicted")]


def cached_pages(fd, off, length):
    r, c = Range(off, length), Cachestat()
    if libc.syscall(451, fd, ctypes.byref(r), ctypes.byref(c), 0) != 0:
        sys.exit(f"fuse_congestion: cachestat: {os.strerror(ctypes.get_errno())}")
    return c.cache


def hint(fd, off, length):
    for o in range(off, off + length, 128 * KIB):
        os.posix_fadvise(fd, o, 128 * KIB, os.POSIX_FADV_WILLNEED)


def main(argv):
    if len(argv) != 2 or argv[1] not in ("idle", "congested"):
        sys.exit("usage: fuse_congestion.py DIR idle|congested")
    names = sorted(n for n in os.listdir(argv[0]) if not n.startswith("."))
    paths = [os.path.join(argv[0], n) for n in names]
    if len(paths) < 80:
        sys.exit(f"fuse_congestion: {argv[0]}: {len(paths)} files, need 80")
    ramped = os.open(paths[0], os.O_RDONLY)
    for _ in range(32):
        os.read(ramped, 64 * KIB)
    if argv[1] == "congested":
        for p in paths[1:80]:
            hint(os.open(p, os.O_RDONLY), 0, 1024 * KIB)
    fresh = os.open(paths[0], os.O_RDONLY)
    reopened = os.open(f"/proc/self/fd/{ramped}", os.O_RDONLY | os.O_NOATIME)
    os.posix_fadvise(reopened, 0, 0, os.POSIX_FADV_RANDOM)
    where = {"ramped": (ramped, 3), "fresh": (fresh, 5), "reopened+RANDOM": (reopened, 7)}
    for fd, mib in where.values():
        hint(fd, mib * 1024 * KIB, 1024 * KIB)
    print(argv[1] + ": " + "; ".join(f"{name} {cached_pages(fd, mib * 1024 * KIB, 1024 * KIB)} of 256 pages"
                                     for name, (fd, mib) in where.items()))


if __name__ == "__main__":
    main(sys.argv[1:])
