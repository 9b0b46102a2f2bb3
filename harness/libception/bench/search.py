"""The maximum failure-free rate of one configuration.

The pass rule is vidload's (`vidload --search`): a rate passes when every
repeat (seeds seed, seed+1, ...) fails at most `max_fail` percent of its
sessions; here an integrity error (a wrong byte) also fails it
(stats.rate_verdict).  The
bracketing differs from vidload's fixed [LO, HI] bisection so that no
probe is spent far from the answer: start at a guess, double (or halve)
until a rate fails (or passes), then bisect until the bracket is within
`rel_resolution` of its lower end.  Each probe runs vidload once per
repeat against the running server, after waiting for the emulated disks
to go idle (settle) and dropping the mount's page cache, so that every
probe starts idle and cold whatever ran before it.
"""
import os
import signal
import threading
import time

from .. import vidload
from . import stats


def _diff(a, b, key):
    try:
        return b[key] - a[key]
    except (KeyError, TypeError):
        return None


def _kill_children(comm):
    me = os.getpid()
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        if ppid == me and name == comm:
            try:
                os.kill(int(d), signal.SIGKILL)
            except ProcessLookupError:
                pass


def _load(h, cfg, settings, rate, seed):
    """Run vidload at `rate` sessions/s.  cfg["loads"] splits the rate over
    several libraries served under URL prefixes (two disks: one vidload
    per disk, run concurrently, results summed)."""
    opts = dict(settings.get("vidload") or {})
    loads = cfg.get("loads")
    if not loads:
        return vidload.run(h.url, cfg["library"], rate, settings["duration"], seed=seed,
                           quiet=True, **opts)["result"]
    parts = [None] * len(loads)
    errors = []

    def one(i, load):
        try:
            parts[i] = vidload.run(h.url + load["path"], load["library"],
                                   round(rate * load["share"], 4), settings["duration"],
                                   seed=seed + 1000 * i, quiet=True, **opts)["result"]
        except Exception as e:
            errors.append(e)

    threads = [threading.Thread(target=one, args=(i, ld)) for i, ld in enumerate(loads)]
    for t in threads:
        t.start()
    try:
        for t in threads:
            t.join()
    except BaseException:
        # Interrupted: the threads' vidloads are our children; stop them so
        # nothing outlives the run, then let the threads return.
        _kill_children("vidload")
        for t in threads:
            t.join()
        raise
    if errors:
        raise errors[0]
    started = sum(p["started"] for p in parts)
    failed = sum(p["failed"] for p in parts)
    hist = max((p["latency_ms"] for p in parts), key=lambda x: x.get("p99", 0))
    errs = {}
    for p in parts:
        for k, v in p["errors"].items():
            errs[k] = errs.get(k, 0) + v
    return {"elapsed": max(p["elapsed"] for p in parts), "started": started, "failed": failed,
            "failed_pct": 100.0 * failed / started if started else 0.0,
            "achieved_rate": sum(p["achieved_rate"] for p in parts),
            "mb_per_s": sum(p["mb_per_s"] for p in parts),
            "max_active": sum(p["max_active"] for p in parts),
            "latency_ms": hist, "errors": errs,
            "first_error": next((p["first_error"] for p in parts if p.get("first_error")), ""),
            "cpu_pct": sum(p.get("cpu_pct") or 0 for p in parts), "parts": parts}


def calls_diff(before, after):
    """Per intercepted call, what happened during the probe: counts and the
    latency histogram (bucket i: calls under 2^i us), after minus before."""
    out = {}
    for name, a in (after.get("calls") or {}).items():
        b = (before.get("calls") or {}).get(name, {})
        hist = [x - y for x, y in zip(a.get("hist", []), b.get("hist", [0] * len(a.get("hist", []))))]
        out[name] = {k: a.get(k, 0) - b.get(k, 0) for k in ("calls", "hits", "bytes")}
        out[name]["hist"] = hist
    return out


def _check_alive(h):
    """A probe against a vanished mount or server measures nothing: stop."""
    for m in h.mounts:
        if m.proc is None or m.proc.poll() is not None:
            err = ""
            if m.proc is not None and m.proc.stderr:
                err = m.proc.stderr.read().strip().splitlines()[-1:] or ""
            raise RuntimeError(f"hddsim at {m.path} exited during the probe "
                               f"(status {m.proc.returncode if m.proc else '?'}) {err}")
    if h.server.proc is None or h.server.proc.poll() is not None:
        raise RuntimeError(f"{h.server.name} exited during the probe: {h.server.log_tail()}")


def _disk_busy(h):
    """Whether any emulated disk of h has commands queued or was busy in
    its last one-second window."""
    for m in h.mounts:
        st = m.stats()
        if st.get("queued", 0) or st.get("window_utilisation", 0) > 0.02:
            return True
    return False


def settle(h, timeout=180.0):
    """Wait until the emulated disks are idle; return the seconds waited.
    A probe that overloaded the server leaves it a backlog when vidload
    hangs up: Apache's threads (and nginx's workers) finish the disk reads
    they are blocked in before they notice the closed connections.  A
    probe started on top of that backlog fails because of its
    predecessor, so the next one waits for it to drain."""
    if not h.mounts:  # a real disk: nothing of ours to watch
        return 0.0
    t0 = time.monotonic()
    quiet = 0
    while quiet < 2 and time.monotonic() - t0 < timeout:
        quiet = 0 if _disk_busy(h) else quiet + 1
        time.sleep(1)
    return round(time.monotonic() - t0, 1)


def probe(rig, h, cfg, settings, rate, seed):
    settle_s = settle(h)
    h.drop_cache()
    before = rig.snapshot(h)
    lists_before = h.group.file_lists() if h.group is not None else None
    res = _load(h, cfg, settings, rate, seed)
    _check_alive(h)
    after = rig.snapshot(h)
    elapsed = res.get("elapsed") or settings["duration"]
    rec = {"rate": rate, "seed": seed, "failed_pct": res["failed_pct"],
           "achieved_rate": res["achieved_rate"], "started": res["started"],
           "failed": res["failed"], "mb_per_s": res["mb_per_s"],
           "max_active": res["max_active"], "latency_ms": res["latency_ms"],
           "errors": res["errors"], "first_error": res.get("first_error", ""),
           "vidload_cpu_pct": res.get("cpu_pct"), "settle_s": settle_s}
    if "parts" in res:
        rec["parts"] = res["parts"]
    if "disk" in before and "disk" in after:
        db = _diff(before["disk"], after["disk"], "bytes")
        busy = _diff(before["disk"], after["disk"], "busy_s")
        reads = _diff(before["disk"], after["disk"], "reads")
        rec["disk_mb_per_s"] = db / elapsed / 1e6 if db is not None else None
        rec["disk_utilisation"] = busy / elapsed if busy is not None else None
        rec["disk_reads"] = reads
        rec["disk_avg_read_kib"] = db / reads / 1024 if reads else None
        # how the commands came: short ones (a page fault's one page, a
        # read-ahead split) cost a seek each for little
        for key in ("reads_4k", "reads_under_128k", "continued", "cache_hits"):
            rec[f"disk_{key}"] = _diff(before["disk"], after["disk"], key)
    for snap in (before, after):
        if "daemon_error" in snap:
            rec["daemon_error"] = snap["daemon_error"]
    if "daemon" in after:
        rec["daemon_stats"] = after["daemon"]
        if "daemon" in before:
            rec["calls"] = calls_diff(before["daemon"], after["daemon"])
    if h.group is not None:
        rec["cgroup_max_usage"] = h.group.max_usage()
        rec["cgroup_limit"] = h.group.limit_bytes
        lists = h.group.file_lists()
        lists["refault_file"] -= lists_before["refault_file"]
        rec["memory_lists"] = lists
    rec["pass"] = (res["failed_pct"] <= settings.get("max_fail", 0.3)
                   and not res["errors"].get("integrity"))
    return rec


def warm_up(rig, h, cfg, settings, tag):
    """settings["warmup"] = {"rate": R, "duration": S}: load the server at
    R sessions/s for S seconds before the first probe, unrecorded but for
    its outcome.  A policy that adapts (the adaptive prefetch size) meets
    its first load in the search's second probe otherwise, and a failure
    there, before it moved, caps its answer; every configuration of a run
    gets the same warm-up, so the comparison stays fair."""
    w = settings.get("warmup")
    if not w:
        return None
    rate, duration = float(w["rate"]), float(w["duration"])
    settle(h)
    rig.progress.begin(f"{tag}: warm-up, {rate:g} sessions/s for {duration:g} s")
    res = _load(h, cfg, {**settings, "duration": duration}, rate, int(settings.get("seed", 1)))
    rig.progress.end()
    _check_alive(h)
    rig.progress.line(f"{tag}: warm-up {rate:g}/s -> failed {res['failed_pct']:.2f}%, "
                      f"{res['mb_per_s']:.1f} MB/s to clients (not a probe)")
    return {"rate": rate, "duration": duration, "failed_pct": res["failed_pct"],
            "mb_per_s": res["mb_per_s"]}


def next_rate(lo, hi, start, floor, cap, rel):
    """The bracketing: the next rate to probe given the highest passed
    (lo) and lowest failed (hi) so far, or None when the search is done."""
    if lo is None and hi is None:
        return round(start, 3)
    if hi is None:
        return None if lo >= cap else round(min(lo * 2, cap), 3)
    if lo is None:
        return None if hi / 2 < floor else round(hi / 2, 3)
    return None if (hi - lo) / lo <= rel else round((lo + hi) / 2, 3)


def max_failure_free(rig, h, cfg, settings, tag):
    """Search and return {"answer": rate or None, "at_answer": probe record,
    "probes": [...]} (answer None: even the lowest rate tried failed)."""
    warmup = warm_up(rig, h, cfg, settings, tag)
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
        rate = next_rate(lo, hi, start, floor, cap, rel)
        if rate is None:
            break
        seeds_passed = {}
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
                + (f" (after {rec['settle_s']:g} s for the disk to go idle)"
                   if rec["settle_s"] >= 5 else "")
                + f": {'pass' if rec['pass'] else 'FAIL'}")
            seeds_passed[seed + i] = rec["pass"]
            # all_seeds: run every seed even after one failed, so that a
            # bootstrap over seeds (bench/stats.py) sees every verdict
            if not rec["pass"] and not settings.get("all_seeds"):
                break
        if stats.rate_verdict(seeds_passed, min_seeds=repeats):
            lo = rate
            best = rec
        else:
            hi = rate
    out = {"answer": lo, "failed_above": hi, "at_answer": best, "probes": probes}
    if warmup:
        out["warmup"] = warmup
    return out
