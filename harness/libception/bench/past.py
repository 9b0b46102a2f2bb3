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
import json
import os
import subprocess
import sys
import time

from .. import servers, sizes, vidload

# the program that reads the past, in its own process (its docstring says how)
READER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "past_reader.py")
# receptiond's window when the configuration names none (LC_DEFAULT_PREFETCH)
DEFAULT_WINDOW = "2M"


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


# How each server sends a segment (past_reader.py, PLAN), from strace
# of the real servers serving byte ranges (2026-11-29) and checked
# against them (tests/test_blockdisk.py, docs/benchmark.md): nginx and Apache with
# EnableSendfile open the file per request and sendfile the range whole
# (nginx's sendfile_max_chunk cuts it; without sendfile nginx reads 32
# KiB at a time, its output buffers); Apache without it maps the file
# (EnableMMAP, Debian's) or read()s 8,000 bytes at a time; lighttpd keeps
# a file open until it has gone unread for about 2 s (kept at 1.5 s,
# closed by 3) and sends 256 KiB per sendfile, or preads 16 KiB (writev,
# write); Caddy (Go) reads the first 512 bytes, then sendfiles the rest.
SENDFILE = {"call": "sendfile", "piece": 0, "head": 0, "keep_s": 0}
LIGHTTPD_KEEP_S = 2.0


def server_plan(cfg):
    """How the configuration's server sends a segment (a PLAN)."""
    server = cfg.get("server", "nginx")
    t = {**servers.SERVERS[server].defaults, **(cfg.get("tunables") or {})}
    if server == "nginx":
        if not t["sendfile"]:   # through its output buffers, 32 KiB each
            return {**SENDFILE, "call": "read", "piece": 32 << 10}
        return {**SENDFILE, "piece": int(t["sendfile_max_chunk"] or 0)}
    if server == "apache":
        if t["sendfile"]:
            return SENDFILE
        return {**SENDFILE, "call": "mmap"} if t["mmap"] else \
            {**SENDFILE, "call": "read", "piece": 8000}
    if server == "lighttpd":
        if t["network_backend"] == "sendfile":
            return {**SENDFILE, "piece": 256 << 10, "keep_s": LIGHTTPD_KEEP_S}
        return {**SENDFILE, "call": "read", "piece": 16 << 10, "keep_s": LIGHTTPD_KEEP_S}
    return {**SENDFILE, "head": 512}   # caddy


def loads(cfg, docroot, rate, seed):
    """(library, root, rate, seed) per vidload of a probe, as run_load
    splits them (bench/probe.py)."""
    if not cfg.get("loads"):
        return [(cfg["library"], docroot, rate, seed)]
    return [(ld["library"], os.path.join(docroot, ld["path"].strip("/")),
             round(rate * ld["share"], 4), seed + 1000 * i) for i, ld in enumerate(cfg["loads"])]


def replay(reads, how, procs="", window=0, plan=SENDFILE):
    """Read [(t, offset, bytes, path)] in order, as `how` says
    (past_reader.py: "server", or "daemon" with its `window`), each
    segment sent as `plan` says (server_plan), in a process that joins
    the memory group whose `procs` file is named; the bytes its windows
    read."""
    proc = subprocess.run([sys.executable, READER, procs, how, str(window), json.dumps(plan)],
                          input="".join(f"{t} {off} {n} {path}\n" for t, off, n, path in reads),
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
    how, plan = "daemon" if window else "server", server_plan(cfg)
    t0 = time.monotonic()
    with contextlib.ExitStack() as untimed:
        for m in h.mounts:
            untimed.enter_context(m.untimed())
        ahead = replay(chosen, how, h.group.procs_file() if h.group is not None else "",
                       window or 0, plan)
    return {"past_s": past_s, "segments": len(reads), "past_bytes": sum(r[2] for r in reads),
            "ahead_bytes": ahead, "read_as": how, "sent_as": plan,
            "filled_segments": len(chosen), "filled_bytes": total,
            "fill_s": round(time.monotonic() - t0, 1), "fill_untimed": bool(h.mounts),
            "oldest_filled_s": chosen[0][0] if chosen else None}, past_s
