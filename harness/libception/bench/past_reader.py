"""The reader that fills a probe's page cache with its past (past.py).

    python3 past_reader.py PROCS HOW WINDOW PLAN < "OFFSET BYTES PATH" lines

Run as its own process so that it can join the memory group (PROCS, a
cgroup.procs file, or "") and what it reads is charged there, as the
server's own reads would be; it joins once it has started, so that the
interpreter's own memory (~8 MiB) stays charged where it was (cgroup v1
moves no charges), not to a small group the server has almost filled.
It prints the bytes its windows read.

It reads as the configuration did.  HOW "server": each segment as the
server sends it (PLAN, below), so that the kernel's own read-ahead, at
the disk's read_ahead_kb, leaves the tail beyond each segment it leaves
for the server.  Measured on ext4 over a loop device (2026-11-28), after
a 512 KiB segment sent by nginx: 128 KiB read-ahead leaves 128 KiB
beyond it, 256 KiB 256-384 KiB, 1 MiB 1.3-1.8 MiB, 4 MiB 1.3-6 MiB; a
model of fixed pieces had left nothing at 128-256 KiB, and reading in
1 MiB pieces left 0-1.5 MiB whatever the setting.

HOW "daemon": each segment in turn as receptiond serves it (prefetch.c
rd_window): from the first byte that is not cached (cachestat(2)), a
window of WINDOW bytes (or the rest of the segment) is loaded as
receptiond loads it (prefetch.c map_piece: WILLNEED hints, then a touch
of each page through a MADV_RANDOM mapping, which neither reads around
nor marks a page accessed), and then the segment is sent as the server
sends it.  The campaign note (docs/notes/2026-11-27-measurement-campaign.md,
sessions 31 and 32) has why each of these matters:
- windows when each session missed, in time order: a model that walked
  a file's segments as one run gave a session trailing another on the
  same video no window of its own;
- loaded, not read: a read marks a page accessed, the send was then its
  second access, and every sent page went to the active list (4.3-5.0
  GiB of 8.1 at the probes' end; receptiond leaves about 2);
- a session that was watching before the oldest segment replayed enters
  mid-window and gets that window's rest, on the file's grid of windows
  (sessions start at its first byte): a window of its own put every such
  session's windows in one phase, and their next misses came as one wave
  30-60 s into the probe, the larger the window the larger.

PLAN (JSON, past.server_plan) is how the server sends a segment, which
decides what the kernel reads ahead: `call` "sendfile", "read" (pread
in pieces) or "mmap" (fault the range in through a mapping and read
from it); `piece`, the bytes per call (0: the whole segment); `head`,
bytes read() before the rest is sent; `keep_s`, how long the server
keeps a file open after a request (0: it opens the file per request).
A kept descriptor carries the kernel's read-ahead state from one
request to the next, as a fresh one does not.
"""
import json
import mmap
import os
import sys

if not __package__:   # run as a script (past.replay): find the harness
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))))
from libception.pagecache import cachestat_fd  # noqa: E402

PAGE = os.sysconf("SC_PAGE_SIZE")
HINT = 128 << 10   # what one WILLNEED call surely reads (read_ahead_kb's floor)


def nr_cache(fd, off, n):
    return cachestat_fd(fd, off, n).nr_cache


def cached_up_to(fd, off, end):
    """The first byte of [off, end) whose page is not cached (end: none);
    off is a page boundary (segments and windows are); receptiond's
    search in C is prefetch.c rd_resident_end_step."""
    pages = -(-(end - off) // PAGE)
    if nr_cache(fd, off, end - off) == pages:
        return end
    lo, hi = 0, pages   # [off, lo pages) cached, [off, hi pages) not all
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if nr_cache(fd, off, mid * PAGE) == mid:
            lo = mid
        else:
            hi = mid
    return off + lo * PAGE


def load(fd, lo, hi):
    """Make [lo, hi) resident without marking a page accessed."""
    for o in range(lo, hi, HINT):
        os.posix_fadvise(fd, o, min(HINT, hi - o), os.POSIX_FADV_WILLNEED)
    base = lo // PAGE * PAGE
    with mmap.mmap(fd, hi - base, mmap.MAP_SHARED, mmap.PROT_READ, offset=base) as m:
        m.madvise(mmap.MADV_RANDOM)
        for i in range(0, hi - base, PAGE):
            m[i]


def send(fd, off, end, plan, sink):
    """[off, end) as the server sends it."""
    if plan["head"]:
        off += len(os.pread(fd, min(plan["head"], end - off), off))
    if plan["call"] == "mmap":
        base = off // PAGE * PAGE
        with mmap.mmap(fd, end - base, mmap.MAP_SHARED, mmap.PROT_READ, offset=base) as m:
            for i in range(off - base, end - base, PAGE):
                m[i]
        return
    while off < end:
        n = min(plan["piece"] or end - off, end - off)
        k = (os.sendfile(sink, fd, off, n) if plan["call"] == "sendfile"
             else len(os.pread(fd, n, off)))
        if k <= 0:
            break
        off += k


class Files:
    """Descriptors as the server holds them: opened per request, or kept
    while the file was read within the last `keep_s` seconds of the past."""

    LIMIT = 512   # kept at once; more wait for their next request closed

    def __init__(self, keep_s):
        self.keep_s, self.open = keep_s, {}   # path: (fd, last read at)

    def get(self, path, t):
        fd, last = self.open.pop(path, (None, None))
        if fd is not None and t - last > self.keep_s:
            os.close(fd)
            fd = None
        if fd is None:
            fd = os.open(path, os.O_RDONLY)
        return fd

    def done(self, path, fd, t):
        if not self.keep_s:
            os.close(fd)
            return
        self.open[path] = (fd, t)
        if len(self.open) > self.LIMIT:
            oldest = min(self.open, key=lambda p: self.open[p][1])
            os.close(self.open.pop(oldest)[0])


def main(procs, how, window, plan):
    if procs:
        with open(procs, "w") as f:
            f.write(str(os.getpid()))
    sink = os.open(os.devnull, os.O_WRONLY)
    files = Files(plan["keep_s"])
    windows = 0
    ends = {}   # path: the ends of the segments replayed so far
    for line in sys.stdin:
        t, off, n, path = line.rstrip("\n").split(" ", 3)
        t, off, end = float(t), int(off), int(off) + int(n)
        fd = files.get(path, t)
        if how == "daemon":
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
            replayed = ends.setdefault(path, set())
            # a session that was watching before the oldest read replayed
            # enters here, in the middle of a window the daemon read when
            # it crossed into it: windows lie on the file's grid of
            # windows, as sessions start at its first byte
            entering = off != 0 and off not in replayed
            replayed.add(end)
            miss = cached_up_to(fd, off, end)
            if miss < end:
                wend = (miss // window + 1) * window if entering else miss + window
                wend = min(os.fstat(fd).st_size, max(wend, end))
                windows += wend - miss
                load(fd, miss, wend)
        send(fd, off, end, plan, sink)
        files.done(path, fd, t)
    print(windows)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), json.loads(sys.argv[4]))
