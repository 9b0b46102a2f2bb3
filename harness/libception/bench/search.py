"""The maximum failure-free rate of one configuration.

The pass rule is vidload's (`vidload --search`): a rate passes when every
repeat (seeds seed, seed+1, ...) fails at most `max_fail` percent of its
sessions; here an integrity error (a wrong byte) also fails it.  The
bracketing differs from vidload's fixed [LO, HI] bisection so that no
probe is spent far from the answer: start at a guess, double (or halve)
until a rate fails (or passes), then bisect until the bracket is within
`rel_resolution` of its lower end.  Each probe runs vidload once per
repeat against the running server, after dropping the mount's page cache
so that every probe starts cold whatever ran before it.
"""
from .. import vidload


def _diff(a, b, key):
    try:
        return b[key] - a[key]
    except (KeyError, TypeError):
        return None


def probe(rig, h, cfg, settings, rate, seed):
    if h.mount is not None:
        h.mount.drop_cache()
    before = rig.snapshot(h)
    opts = dict(settings.get("vidload") or {})
    res = vidload.run(h.url, cfg["vidload_library"] if "vidload_library" in cfg
                      else cfg["library"], rate, settings["duration"], seed=seed, quiet=True,
                      **opts)["result"]
    after = rig.snapshot(h)
    elapsed = res.get("elapsed") or settings["duration"]
    rec = {"rate": rate, "seed": seed, "failed_pct": res["failed_pct"],
           "achieved_rate": res["achieved_rate"], "started": res["started"],
           "failed": res["failed"], "mb_per_s": res["mb_per_s"],
           "max_active": res["max_active"], "latency_ms": res["latency_ms"],
           "errors": res["errors"], "first_error": res.get("first_error", ""),
           "vidload_cpu_pct": res.get("cpu_pct")}
    if "disk" in before and "disk" in after:
        db = _diff(before["disk"], after["disk"], "bytes")
        busy = _diff(before["disk"], after["disk"], "busy_s")
        reads = _diff(before["disk"], after["disk"], "reads")
        rec["disk_mb_per_s"] = db / elapsed / 1e6 if db is not None else None
        rec["disk_utilisation"] = busy / elapsed if busy is not None else None
        rec["disk_reads"] = reads
        rec["disk_avg_read_kib"] = db / reads / 1024 if reads else None
    if "daemon" in after:
        rec["daemon_stats"] = after["daemon"]
    if h.group is not None:
        rec["cgroup_max_usage"] = h.group.max_usage()
        rec["cgroup_limit"] = h.group.limit_bytes
    rec["pass"] = (res["failed_pct"] <= settings.get("max_fail", 0.3)
                   and not res["errors"].get("integrity"))
    return rec


def max_failure_free(rig, h, cfg, settings, tag):
    """Search and return {"answer": rate or None, "at_answer": probe record,
    "probes": [...]} (answer None: even the lowest rate tried failed)."""
    start = float(settings["start"])
    floor = float(settings.get("floor", start / 16))
    cap = float(settings.get("cap", start * 16))
    rel = float(settings.get("rel_resolution", 0.1))
    repeats = int(settings.get("repeats", 1))
    seed = int(settings.get("seed", 1))
    lo = hi = None
    best = None
    probes = []
    while True:
        if lo is None and hi is None:
            rate = start
        elif hi is None:
            if lo >= cap:
                break
            rate = min(lo * 2, cap)
        elif lo is None:
            rate = hi / 2
            if rate < floor:
                break
        else:
            if (hi - lo) / lo <= rel:
                break
            rate = (lo + hi) / 2
        rate = round(rate, 3)
        ok = True
        for i in range(repeats):
            rig.progress.begin(f"{tag}: {rate:g} sessions/s for {settings['duration']} s"
                               f" (seed {seed + i})")
            rec = probe(rig, h, cfg, settings, rate, seed + i)
            rig.progress.end()
            probes.append(rec)
            disk = rec.get("disk_mb_per_s")
            rig.progress.line(
                f"{tag}: {rate:g}/s -> failed {rec['failed_pct']:.2f}%, "
                f"{rec['mb_per_s']:.1f} MB/s to clients"
                + (f", disk {disk:.1f} MB/s" if disk is not None else "")
                + f": {'pass' if rec['pass'] else 'FAIL'}")
            if not rec["pass"]:
                ok = False
                break
        if ok:
            lo = rate
            best = rec
        else:
            hi = rate
    return {"answer": lo, "failed_above": hi, "at_answer": best, "probes": probes}
