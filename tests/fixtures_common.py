"""Helpers several components' tests share: the page cache, file digests,
video library files, one HTTP GET, and READER, a Python program that reads a file 4 KiB at a
time (the smallest reads, so whatever is enlarged, libception did)."""
import hashlib
import http.client
import os
import sys

from libception.pagecache import cachestat_fd
from libception.pagecache import evict as drop_cache  # noqa: F401 (the tests' name)


def cachestat(path, off=0, length=0):
    """cachestat_fd of path."""
    fd = os.open(path, os.O_RDONLY)
    try:
        return cachestat_fd(fd, off, length, name=path)
    finally:
        os.close(fd)


def cached_pages(path, off=0, length=0):
    """Pages of [off, off+length) of path in the page cache."""
    return cachestat(path, off, length).nr_cache


def sha256_of(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def write_library(path, videos):
    """A video library file (docs/library-format.md) listing videos, as
    (name, bytes, bitrate, chunk) tuples; returns path."""
    with open(path, "w", encoding="ascii") as f:
        f.write("lcvl 1\n")
        for name, size, rate, chunk in videos:
            f.write(f"video {name} {size} {rate} {chunk}\n")
    return path


def http_get(port, path, timeout=60):
    """(status, body) of GET path from 127.0.0.1:port, on a fresh connection."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("GET", path)
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


# READER FILE [ready] [random] [pause]: prints the file's sha256.
#   ready   print "ready" and wait for a line on stdin before opening FILE
#           (Python's start-up may read cold files through the daemon too;
#           a test takes its baseline after every import)
#   random  POSIX_FADV_RANDOM: no kernel readahead, only the daemon enlarges
#   pause   after the first read, print "first" and wait for a line
READER = r"""
import hashlib, os, sys
path, flags = sys.argv[1], sys.argv[2:]
if "ready" in flags:
    print("ready", flush=True)
    sys.stdin.readline()
fd = os.open(path, os.O_RDONLY)
if "random" in flags:
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
h = hashlib.sha256()
h.update(os.read(fd, 4096))
if "pause" in flags:
    print("first", flush=True)
    sys.stdin.readline()
while True:
    b = os.read(fd, 4096)
    if not b:
        break
    h.update(b)
print(h.hexdigest(), flush=True)
"""


def reader_cmd(path, *flags):
    """The command line that runs READER on path with flags."""
    return [sys.executable, "-c", READER, str(path), *flags]
