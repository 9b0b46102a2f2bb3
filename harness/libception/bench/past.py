"""A probe that starts in the steady state (docs/benchmark.md,
"Steady-state probes"): vidload starts as if sessions had been arriving
for `past_s` seconds (vidload --past), and before it the memory group's
page cache is filled with what those sessions read (their segments, and
the tails the configuration read beyond them: the kernel's read-ahead
or the daemon's windows), newest last, up to the group's limit.

Why: started cold, a slow configuration neither levelled its active
sessions nor filled its 8.1 GiB group within 400 s (nginx vanilla at
2.4-3.8 sessions/s: sessions still rising 11-30%, the group at 26-57%),
so every probe measured a transient in which the page cache never has to
evict, the very trade-off aggressive prefetching lives or dies by.
What fits is the most recent reads (8 GiB held the last 397 s of a past
that read 49 GiB at nginx vanilla's 3 sessions/s, the last 175 s at
libception's 7).  The emulated disk answers the fill untimed (hddsim's
SIGUSR1): timed, it took 95-106 s of every ~400 s probe; untimed, the
page cache ends the same, the drive model starts the warm-up with its
own cache empty and its head where the last probe left it.
"""
import contextlib
import os
import subprocess
import sys
import time

from .. import servers, sizes, vidload

# receptiond's window when the configuration names none (LC_DEFAULT_PREFETCH)
DEFAULT_WINDOW = "2M"

# The reader joins the memory group, so what it reads is charged there,
# as the server's own reads would be; it joins once it has started, so
# that the interpreter's own memory (~8 MiB) stays charged where it was
# (cgroup v1 moves no charges), not to a small group the server has
# almost filled.  It reads as the configuration did.  "server": each
# segment by a fresh open and sendfile(2), as nginx serves a range
# (open_file_cache is off by default), so that the kernel's own
# read-ahead, at the disk's read_ahead_kb, leaves the tail beyond each
# segment it leaves for the server.  Measured on ext4 over a loop device
# (2026-11-28), after a 512 KiB segment: 128 KiB read-ahead leaves 128 KiB
# beyond it, 256 KiB 256-384 KiB, 1 MiB 1.3-1.8 MiB, 4 MiB 1.3-6 MiB; a
# model of fixed pieces had left nothing at 128-256 KiB, and reading in
# 1 MiB pieces left 0-1.5 MiB whatever the setting.  "daemon": each
# segment in turn as receptiond serves it (prefetch.c rd_window): from
# the first byte that is not cached (cachestat(2)), a window of WINDOW
# bytes (or the rest of the segment) is loaded as receptiond loads it
# (prefetch.c map_piece: WILLNEED hints, then a touch of each page
# through a MADV_RANDOM mapping, which neither reads around nor marks a
# page accessed), and then the segment is sent as the server sends it.
# A server that maps files instead (Apache as Debian ships it:
# EnableSendfile Off, EnableMMAP On) faults each segment in through a
# mapping and writes from it; the reader sends so too ("mmap"), since the
# kernel reads around a fault and ahead of a run of faults otherwise
# than for sendfile, and a mapped page is marked accessed otherwise.
# The campaign note (docs/notes/2026-11-27-measurement-campaign.md,
# sessions 31 and 32) has why each of these matters:
# - windows when each session missed, in time order: a model that walked
#   a file's segments as one run gave a session trailing another on the
#   same video no window of its own;
# - loaded, not read: a read marks a page accessed, the send was then
#   its second access, and every sent page went to the active list
#   (4.3-5.0 GiB of 8.1 at the probes' end; receptiond leaves about 2);
# - a session that was watching before the oldest segment replayed
#   enters mid-window and gets that window's rest, on the file's grid of
#   windows (sessions start at its first byte): a window of its own put
#   every such session's windows in one phase, and their next misses
#   came as one wave 30-60 s into the probe, the larger the window the
#   larger.
# It prints the bytes its windows read.
_READER = r"""
import mmap, os, sys
procs, how, window, harness, send = (sys.argv[1], sys.argv[2], int(sys.argv[3]),
                                     sys.argv[4], sys.argv[5])
sys.path.insert(0, harness)
from libception.pagecache import cachestat_fd
out = os.open(os.devnull, os.O_WRONLY)
PAGE = os.sysconf("SC_PAGE_SIZE")
HINT = 128 << 10   # what one WILLNEED call surely reads (read_ahead_kb's floor)
if procs:
    with open(procs, "w") as f:
        f.write(str(os.getpid()))

def nr_cache(fd, off, n):
    return cachestat_fd(fd, off, n).nr_cache

def cached_up_to(fd, off, end):
    # the first byte of [off, end) whose page is not cached (end: none);
    # off is a page boundary (segments and windows are); receptiond's
    # search in C is prefetch.c rd_resident_end_step
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
    # make [lo, hi) resident without marking a page accessed
    for o in range(lo, hi, HINT):
        os.posix_fadvise(fd, o, min(HINT, hi - o), os.POSIX_FADV_WILLNEED)
    base = lo // PAGE * PAGE
    with mmap.mmap(fd, hi - base, mmap.MAP_SHARED, mmap.PROT_READ, offset=base) as m:
        m.madvise(mmap.MADV_RANDOM)
        for i in range(0, hi - base, PAGE):
            m[i]

windows = 0
ends = {}   # path: the ends of the segments replayed so far
for line in sys.stdin:
    off, n, path = line.rstrip("\n").split(" ", 2)
    fd = os.open(path, os.O_RDONLY)
    try:
        off, end = int(off), int(off) + int(n)
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
                wend = ((miss // window + 1) * window if entering else miss + window)
                wend = min(os.fstat(fd).st_size, max(wend, end))
                windows += wend - miss
                load(fd, miss, wend)
        if send == "mmap":
            base = off // PAGE * PAGE
            with mmap.mmap(fd, end - base, mmap.MAP_SHARED, mmap.PROT_READ, offset=base) as m:
                for i in range(off - base, end - base, PAGE):
                    m[i]
        while send == "sendfile" and off < end:
            k = os.sendfile(out, fd, off, end - off)
            if k <= 0:
                break
            off += k
    finally:
        os.close(fd)
print(windows)
"""


def parse(text):
    """`--past`: "longest", or seconds >= 0 (ValueError otherwise)."""
    if text == "longest":
        return text
    value = float(text)
    if not value >= 0:   # NaN too
        raise ValueError(text)
    return value


def seconds(setting, library):
    """`past_s` of the settings: None or 0 (start cold), a number of
    seconds, or "longest" (the library's longest video: every session
    that could still be running at the start is)."""
    if setting == "longest":
        return round(vidload.longest_video_s(library), 1)
    return float(setting or 0)


def newest(reads, budget):
    """The most recently read segments that fit in `budget` bytes, least
    recently read first (the order that leaves the page cache's LRU about
    as the past left it): [(t, offset, bytes, path)], and their bytes."""
    keep, total = [], 0
    for r in reversed(reads):
        if total + r[2] > budget:
            break
        keep.append(r)
        total += r[2]
    return keep[::-1], total


def daemon_window(cfg):
    """receptiond's window where the daemon prefetches, None where the
    server's reads go to the kernel (which reads ahead on its own)."""
    if cfg.get("mode") in ("libception", "prefetch", "watch"):
        return sizes.parse(str(cfg.get("prefetch") or DEFAULT_WINDOW))
    return None


def server_send(cfg):
    """How the configuration's server sends a segment: "mmap" for Apache
    mapping files (EnableSendfile Off, EnableMMAP On: Debian's), else
    "sendfile" (nginx, lighttpd, Caddy, Apache with sendfile; a server
    that read()s goes through the same read-ahead as sendfile)."""
    if cfg.get("server") != "apache":
        return "sendfile"
    t = {**servers.Apache.defaults, **(cfg.get("tunables") or {})}
    return "mmap" if t["mmap"] and not t["sendfile"] else "sendfile"


def loads(cfg, docroot, rate, seed):
    """(library, root, rate, seed) per vidload of a probe, as run_load
    splits them (bench/probe.py)."""
    if not cfg.get("loads"):
        return [(cfg["library"], docroot, rate, seed)]
    return [(ld["library"], os.path.join(docroot, ld["path"].strip("/")),
             round(rate * ld["share"], 4), seed + 1000 * i) for i, ld in enumerate(cfg["loads"])]


def replay(reads, how, procs="", window=0, send="sendfile"):
    """Read [(t, offset, bytes, path)] in order, as `how` says (_READER:
    "server", or "daemon" with its `window`), each segment sent as `send`
    says ("sendfile" or "mmap"), in a process that joins the memory group
    whose `procs` file is named; the bytes its windows read."""
    harness = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    proc = subprocess.run([sys.executable, "-c", _READER, procs, how, str(window), harness,
                           send],
                          input="".join(f"{off} {n} {path}\n" for _, off, n, path in reads),
                          text=True, capture_output=True)
    if proc.returncode:
        err = proc.stderr.strip().splitlines()[-1:] or [f"exit status {proc.returncode}"]
        raise RuntimeError(f"filling the page cache with the past's reads: {err[0]}")
    return int(proc.stdout.split()[-1])


def fill(h, cfg, settings, rate, seed):
    """Fill the group's page cache with the past's reads; returns the
    record (None when the probe starts cold) and the past in seconds."""
    past_s = seconds(settings.get("past_s"), cfg.get("library") or cfg["loads"][0]["library"])
    if not past_s:
        return None, 0.0
    opts = settings.get("vidload") or {}
    reads = []
    for library, root, r, s in loads(cfg, h.docroot, rate, seed):
        reads += [(t, off, n, os.path.join(root, path))
                  for t, off, n, path in vidload.past_reads(library, r, past_s, s, **opts)]
    window = daemon_window(cfg)
    reads.sort(key=lambda x: x[0])
    # no memory group: nothing says how much of the past a cache would
    # hold, so the sessions carry on over a cold cache
    budget = 0
    if h.group is not None and h.group.limit_bytes:
        budget = max(0, h.group.limit_bytes - h.group.usage())
    # the reads are replayed one by one, as the server or the daemon made
    # them; what they read ahead (the kernel's tails, the daemon's windows)
    # is not in the budget: reclaim takes the oldest, as it did
    chosen, total = newest(reads, budget)
    how, send = "daemon" if window else "server", server_send(cfg)
    t0 = time.monotonic()
    with contextlib.ExitStack() as untimed:
        for m in h.mounts:
            untimed.enter_context(m.untimed())
        ahead = replay(chosen, how, h.group.procs_file() if h.group is not None else "",
                       window or 0, send)
    return {"past_s": past_s, "segments": len(reads), "past_bytes": sum(r[2] for r in reads),
            "ahead_bytes": ahead, "read_as": how, "sent_by": send,
            "filled_segments": len(chosen), "filled_bytes": total,
            "fill_s": round(time.monotonic() - t0, 1), "fill_untimed": bool(h.mounts),
            "oldest_filled_s": chosen[0][0] if chosen else None}, past_s
