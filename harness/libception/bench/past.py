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

from .. import sizes, vidload

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
# 1 MiB pieces left 0-1.5 MiB whatever the setting.  "window": the
# segments and the daemon's windows (window_tails) with no read-ahead
# (POSIX_FADV_RANDOM), as receptiond's WILLNEED into a MADV_RANDOM
# mapping leaves none, and the server's reads then hit.
_READER = r"""
import os, sys
procs, how = sys.argv[1:3]
buf = memoryview(bytearray(1 << 20))
out = os.open(os.devnull, os.O_WRONLY)
if procs:
    with open(procs, "w") as f:
        f.write(str(os.getpid()))
for line in sys.stdin:
    off, n, path = line.rstrip("\n").split(" ", 2)
    fd = os.open(path, os.O_RDONLY)
    try:
        off, end = int(off), int(off) + int(n)
        if how == "window":
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
        while off < end:
            if how == "window":
                k = os.preadv(fd, [buf[:min(len(buf), end - off)]], off)
            else:
                k = os.sendfile(out, fd, off, end - off)
            if k <= 0:
                break
            off += k
    finally:
        os.close(fd)
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


def newest(reads, budget, merge=True):
    """The most recently read segments that fit in `budget` bytes, least
    recently read first (the order that leaves the page cache's LRU about
    as the past left it): [(t, offset, bytes, path)], and their bytes.
    With `merge`, a file's adjoining segments are one range, read at its
    latest time."""
    keep, total = [], 0
    for r in reversed(reads):
        if total + r[2] > budget:
            break
        keep.append(r)
        total += r[2]
    if not merge:
        return keep[::-1], total
    ranges = []
    for t, off, n, path in sorted(keep, key=lambda r: (r[3], r[1])):
        last = ranges[-1] if ranges else None
        if last and last[3] == path and last[1] + last[2] == off:
            ranges[-1] = (max(last[0], t), last[1], last[2] + n, path)
        else:
            ranges.append((t, off, n, path))
    ranges.sort(key=lambda r: r[0])
    return ranges, total


def window_tails(reads, window, size_of):
    """What receptiond read beyond the past's segments: for each file's
    run of adjoining segments, the tail of the last window that covered
    it, as (t, offset, bytes, path) dated when that window was read.  A
    run is read from its start as the daemon reads: a segment not yet
    covered is read from its first missing byte, max(window, the
    request) (prefetch.c rd_window).  Why: the steady state of a
    prefetching configuration holds each running session's window ahead
    of it; filled with the segments alone, every session carried on
    missed at its next segment within the first 10 s, a burst of one
    window per session (a 2M window, four segments: four times the
    steady state's misses; 8M failed 944 of 1,128 sessions carried on
    at 7.5/s, 2026-11-28)."""
    by_file = {}
    for t, off, n, path in reads:
        by_file.setdefault(path, []).append((off, n, t))
    out = []
    for path, segs in by_file.items():
        segs.sort()
        size = size_of(path)
        end, t_read, covered = None, None, None
        for off, n, t in segs + [(None, 0, None)]:
            if end is not None and off != end:   # a run ends: its window's tail
                tail = covered if off is None else min(covered, off)
                if tail > end:
                    out.append((t_read, end, tail - end, path))
                covered = None
            if off is None:
                break
            if covered is None:
                covered = off
            if off + n > covered:
                lo = max(off, covered)
                covered, t_read = min(size, lo + max(window, off + n - lo)), t
            end = off + n
    return out


def daemon_window(cfg):
    """receptiond's window where the daemon prefetches, None where the
    server's reads go to the kernel (which reads ahead on its own)."""
    if cfg.get("mode") in ("libception", "prefetch", "watch"):
        return sizes.parse(str(cfg.get("prefetch") or DEFAULT_WINDOW))
    return None


def loads(cfg, docroot, rate, seed):
    """(library, root, rate, seed) per vidload of a probe, as run_load
    splits them (bench/probe.py)."""
    if not cfg.get("loads"):
        return [(cfg["library"], docroot, rate, seed)]
    return [(ld["library"], os.path.join(docroot, ld["path"].strip("/")),
             round(rate * ld["share"], 4), seed + 1000 * i) for i, ld in enumerate(cfg["loads"])]


def replay(reads, how, procs=""):
    """Read [(t, offset, bytes, path)] in order, as `how` says (_READER),
    in a process that joins the memory group whose `procs` file is named."""
    proc = subprocess.run([sys.executable, "-c", _READER, procs, how],
                          input="".join(f"{off} {n} {path}\n" for _, off, n, path in reads),
                          text=True, capture_output=True)
    if proc.returncode:
        err = proc.stderr.strip().splitlines()[-1:] or [f"exit status {proc.returncode}"]
        raise RuntimeError(f"filling the page cache with the past's reads: {err[0]}")


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
    ahead = window_tails(reads, window, os.path.getsize) if window else []
    reads += ahead
    reads.sort(key=lambda x: x[0])
    # no memory group: nothing says how much of the past a cache would
    # hold, so the sessions carry on over a cold cache
    budget = 0
    if h.group is not None and h.group.limit_bytes:
        budget = max(0, h.group.limit_bytes - h.group.usage())
    # the server's reads are replayed one by one, as it made them; the
    # kernel's tails are not in the budget: reclaim takes the oldest
    chosen, total = newest(reads, budget, merge=bool(window))
    how = "window" if window else "server"
    t0 = time.monotonic()
    with contextlib.ExitStack() as untimed:
        for m in h.mounts:
            untimed.enter_context(m.untimed())
        replay(chosen, how, h.group.procs_file() if h.group is not None else "")
    return {"past_s": past_s, "segments": len(reads), "past_bytes": sum(r[2] for r in reads),
            "ahead_bytes": sum(r[2] for r in ahead), "read_as": how,
            "filled_ranges": len(chosen), "filled_bytes": total,
            "fill_s": round(time.monotonic() - t0, 1), "fill_untimed": bool(h.mounts),
            "oldest_filled_s": chosen[0][0] if chosen else None}, past_s
