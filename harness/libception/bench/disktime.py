"""Where a probe's disk time went, from two snapshots of hddsim's counters,
and receptiond's queue wait over the same interval from two snapshots of
its histogram (docs/benchmark.md, "Disk time and queue wait")."""

# hddsim counters the snapshots sum over the mounts
COUNTERS = ("bytes", "reads", "busy_s", "position_s", "transfer_s", "overhead_s", "media_s",
            "commands", "commands_4k", "commands_under_128k", "commands_under_1m",
            "commands_over_1m")


def summed(disk_stats):
    """One dict of COUNTERS summed over several mounts' stats."""
    return {k: sum(d.get(k, 0) for d in disk_stats) for k in COUNTERS}


def disk_time(before, after, elapsed_s):
    """Seconds positioning, transferring and in command overhead between
    two summed snapshots, the commands by size class, MB/s from the disk,
    the busy share, and the transfer share: of the drive's time on the
    bytes it delivered, the share spent passing them under the head
    (media_s, which counts the bytes its read-ahead read while idle and a
    later command took from the cache; busy_s counts those commands at
    the interface's speed)."""
    d = {k: after.get(k, 0) - before.get(k, 0) for k in COUNTERS}
    busy = d["busy_s"]
    mechanical = d["media_s"] + d["position_s"] + d["overhead_s"]
    return {"elapsed_s": round(elapsed_s, 3), "busy_s": round(busy, 3),
            "position_s": round(d["position_s"], 3), "transfer_s": round(d["transfer_s"], 3),
            "overhead_s": round(d["overhead_s"], 3), "media_s": round(d["media_s"], 3),
            "busy_share": round(busy / elapsed_s, 4) if elapsed_s > 0 else None,
            "transfer_share": round(d["media_s"] / mechanical, 4) if mechanical > 0 else None,
            "mb_per_s": round(d["bytes"] / elapsed_s / 1e6, 3) if elapsed_s > 0 else None,
            "reads": d["reads"],
            # drive commands (pieces FUSE delivered back to back count once)
            "commands": {"<=4K": d["commands_4k"],
                         "4K-128K": d["commands_under_128k"] - d["commands_4k"],
                         "128K-1M": d["commands_under_1m"] - d["commands_under_128k"],
                         "1M": d["commands"] - d["commands_under_1m"] - d["commands_over_1m"],
                         ">1M": d["commands_over_1m"]}}


def per_window(rec):
    """A probe's disk time per window receptiond served in its judged
    window (the queue wait's count): {"position_ms", "transfer_ms",
    "disk_mb"}, or None without hddsim, daemon or windows.  The disk's
    every byte and second count, the program's own reads too, so a
    figure above the daemon's own share says others read beside it."""
    d, w = rec.get("disk_time") or {}, (rec.get("queue_wait_ms") or {}).get("count")
    if not w or d.get("position_s") is None or d.get("mb_per_s") is None:
        return None
    return {"position_ms": d["position_s"] / w * 1e3, "transfer_ms": d["transfer_s"] / w * 1e3,
            "disk_mb": d["mb_per_s"] * d["elapsed_s"] / w}


def _buckets(daemon_stats, key):
    """{top us: count} of histogram `key` summed over the daemon's devices."""
    out = {}
    for dev in (daemon_stats or {}).get("devices") or []:
        for top, count in (dev.get(key) or {}).get("buckets") or []:
            out[top] = out.get(top, 0) + count
    return out


def queue_wait(before, after, key="wait_us"):
    """The daemon's queue wait between two stats snapshots: {"count",
    "p50", "p99", "max"} in ms (bucket tops: within 6%), or None when the
    snapshots hold no histogram buckets."""
    if not before or not after:
        return None
    b, a = _buckets(before, key), _buckets(after, key)
    if not a and not any(d.get(key) for d in after.get("devices") or []):
        return None
    diff = sorted((top, a[top] - b.get(top, 0)) for top in a if a[top] > b.get(top, 0))
    total = sum(c for _, c in diff)
    if not total:
        return {"count": 0, "p50": None, "p99": None, "max": None}

    def quantile(q):
        rank, seen = q * total, 0
        for top, c in diff:
            seen += c
            if seen > rank or seen == total:
                return round(top / 1e3, 3)
    return {"count": total, "p50": quantile(0.5), "p99": quantile(0.99),
            "max": round(diff[-1][0] / 1e3, 3)}
