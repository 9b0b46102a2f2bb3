"""One probe: a vidload run at one rate and one seed against a running
configuration (docs/benchmark.md, "Steady-state probes" and "The probe
record").

Before it, the emulated disks settle (settle) and the mount's and the
group's page cache is dropped, so that every probe starts idle and cold
whatever ran before it.  Then a warm-up whose sessions are not judged
and a judged window; meanwhile the memory group is sampled, the counters
are read when the warm-up ends, and other processes' CPU is metered.
The record holds the active sessions and the memory group over time, the
steady-state verdict, the disk's time and receptiond's queue wait over
the judged window, and the other load.
"""
import os
import signal
import threading
import time

from .. import results, vidload
from . import cpumeter, disktime, past, stats, steady

SAMPLE_S = 5.0   # timeline interval (vidload's and the memory group's)
# vidload's counts per timeline sample: sessions active, and failed so far
# (every kind; those carried on from the past)
TIMELINE_COUNTS = ("active", "failed", "past_failed")


def _counted_by(timeline, key, share):
    """The first sample time by which `share` of `key`'s final count had
    been counted (None without that series or when it never rose)."""
    t, counts = timeline.get("t_s") or [], timeline.get(key) or []
    if not counts or not counts[-1]:
        return None
    return next(t for t, c in zip(t, counts) if c >= share * counts[-1])


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


def judged_seconds(settings, rate):
    """The judged window: `duration` seconds, or as long as `judged_sessions`
    (the paper's 14,400) take to start at `rate`."""
    n = settings.get("judged_sessions")
    return round(n / rate, 3) if n else settings["duration"]


def probe_seconds(search):
    """About how long one probe takes (settling and set-up included)."""
    judged = search["duration"]
    if search.get("judged_sessions"):
        judged = search["judged_sessions"] / search["start"]
    # filling the page cache with the past's reads: ~1 minute for 8 GiB
    fill = 60 if search.get("past_s") else 0
    return (search.get("warmup_s") or 0) + judged + fill + 15


def run_load(h, cfg, settings, rate, seed):
    """Run vidload at `rate` sessions/s.  cfg["loads"] splits the rate over
    several libraries served under URL prefixes (two disks: one vidload
    per disk, run concurrently, results summed)."""
    opts = dict(settings.get("vidload") or {})
    opts.setdefault("warmup", settings.get("warmup_s") or None)
    opts.setdefault("timeline", SAMPLE_S)
    opts.setdefault("past", settings.get("past_resolved") or None)
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
    first = parts[0]
    return {"elapsed": max(p["elapsed"] for p in parts), "started": started, "failed": failed,
            "warmup": first.get("warmup"),
            "warmup_started": sum(p.get("warmup_started", 0) for p in parts),
            "warmup_failed": sum(p.get("warmup_failed", 0) for p in parts),
            "past_running": sum(p.get("past_running", 0) for p in parts),
            "past_failed": sum(p.get("past_failed", 0) for p in parts),
            "timeline": {"t_s": first["timeline"]["t_s"],
                         **{k: [sum(x) for x in zip(*(p["timeline"].get(k, []) for p in parts))]
                            for k in TIMELINE_COUNTS}},
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


def check_alive(h):
    """A probe against a vanished mount or server measures nothing: stop."""
    for m in h.mounts:
        if m.proc is None or m.proc.poll() is not None:
            err = ""
            if m.proc is not None and m.proc.stderr:
                err = m.proc.stderr.read().strip().splitlines()[-1:] or ""
            raise RuntimeError(f"hddsim at {m.path} exited during the probe "
                               f"(status {m.proc.returncode if m.proc else '?'}) {err}")
    if h.server.proc is None or h.server.proc.poll() is not None:
        kills = h.group.oom_kills() if h.group is not None else 0
        why = (f"the memory group's limit ({(h.group.limit_bytes or 0) / 2**20:.0f} MiB) killed "
               f"{kills} process(es): " if kills else "")
        raise RuntimeError(f"{h.server.name} exited during the probe: {why}{h.server.log_tail()}")


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


def interval_figures(prev, cur):
    """What the disk and receptiond's queue did between two samples
    ((t, disk busy seconds, daemon stats), a figure None where there is
    no hddsim or no daemon): the disk's busy share, the windows the
    daemon served and their queue wait's p99 in ms.  Beside the active
    sessions they tell a probe's start from its judged window: a wave of
    misses, a saturated disk or a long queue when sessions failed."""
    if prev is None:
        return None, None, None
    (t0, busy0, stats0), (t1, busy1, stats1) = prev, cur
    share = None
    if busy0 is not None and busy1 is not None and t1 > t0:
        share = round((busy1 - busy0) / (t1 - t0), 3)
    wait = disktime.queue_wait(stats0, stats1)
    return share, wait and wait["count"], wait and wait["p99"]


class _Sampler:
    """Every SAMPLE_S seconds while vidload runs: the memory group's usage
    and page cache, and since the last sample the disk's busy share and
    the windows receptiond served with their queue wait's p99; once, when
    the warm-up ends, the counters the judged window's disk time and
    queue wait start from."""

    SERIES = ("cgroup_bytes", "cgroup_cache_bytes", "disk_busy", "windows",
              "queue_wait_p99_ms")

    def __init__(self, rig, h, warmup_s):
        self.rig, self.h, self.warmup_s = rig, h, warmup_s
        self.t, self.series = [], {k: [] for k in self.SERIES}
        self.judged = None
        self._last = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self, t, snap):
        usage = cache = None
        try:
            if self.h.group is not None:
                usage, cache = self.h.group.usage(), self.h.group.stat().get("cache", 0)
        except OSError:
            pass
        snap = snap or {}
        now = (t, (snap.get("disk") or {}).get("busy_s"), snap.get("daemon"))
        figures = interval_figures(self._last, now)
        self._last = now
        self.t.append(round(t, 1))
        for k, v in zip(self.SERIES, (usage, cache) + figures):
            self.series[k].append(v)

    def _run(self):
        t0 = time.monotonic()
        while True:
            t = time.monotonic() - t0
            # the rig's own counters (disk and daemon), once per sample;
            # the one at the warm-up's end starts the judged window's
            try:
                snap = self.rig.snapshot(self.h)
            except OSError:
                snap = None
            if self.judged is None and t >= self.warmup_s and snap is not None:
                self.judged = (time.monotonic(), snap)
            self._sample(t, snap)
            wait = SAMPLE_S - (time.monotonic() - t0) % SAMPLE_S
            if self.judged is None:
                wait = min(wait, max(0.05, self.warmup_s - t))
            if self._stop.wait(wait):
                return

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def at(self, ts):
        """Each series' sample taken at or just before each time in ts."""
        out, i = {k: [] for k in self.SERIES}, 0
        for t in ts:
            while i + 1 < len(self.t) and self.t[i + 1] <= t:
                i += 1
            for k in self.SERIES:
                out[k].append(self.series[k][i] if self.t else None)
        return out


def _ours(h):
    """The processes of this run: the bench and its descendants, and the
    memory group's members (the server, the daemon)."""
    def ours(procs):
        mine = cpumeter.descendants(os.getpid(), procs)
        if h.group is not None:
            try:
                for pid in h.group.pids():
                    mine |= cpumeter.descendants(pid, procs)
            except OSError:
                pass
        return mine
    return ours


def probe(rig, h, cfg, settings, rate, seed):
    """One vidload run at `rate` with `seed`: the probe record
    (docs/benchmark.md, "The probe record")."""
    settle_s = settle(h)
    h.drop_cache()
    filled, past_s = past.fill(h, cfg, settings, rate, seed)
    warmup_s = float(settings.get("warmup_s") or 0)
    run_settings = {**settings, "duration": judged_seconds(settings, rate),
                    "past_resolved": past_s}
    before = rig.snapshot(h)
    lists_before = h.group.file_lists() if h.group is not None else None
    with cpumeter.CpuMeter(_ours(h)) as meter, _Sampler(rig, h, warmup_s) as sampler:
        res = run_load(h, cfg, run_settings, rate, seed)
    check_alive(h)
    t_after = time.monotonic()
    after = rig.snapshot(h)
    elapsed = res.get("elapsed") or run_settings["duration"]
    rec = {"rate": rate, "seed": seed, "failed_pct": res["failed_pct"],
           "achieved_rate": res["achieved_rate"], "started": res["started"],
           "failed": res["failed"], "mb_per_s": res["mb_per_s"],
           "max_active": res["max_active"], "latency_ms": res["latency_ms"],
           "errors": res["errors"], "first_error": res.get("first_error", ""),
           "vidload_cpu_pct": res.get("cpu_pct"), "settle_s": settle_s,
           "warmup_s": warmup_s, "judged_s": round(elapsed, 3),
           "warmup_started": res.get("warmup_started", 0),
           "warmup_failed": res.get("warmup_failed", 0), "past": filled}
    tl = res.get("timeline") or {"t_s": [], "active": []}
    if filled:
        filled.update(running=res.get("past_running", 0), failed=res.get("past_failed", 0),
                      # when they failed: at the start, or all along
                      failed_by_s=[_counted_by(tl, "past_failed", q) for q in (0.5, 1.0)])
    sampled = sampler.at(tl["t_s"])
    usage = sampled["cgroup_bytes"]
    rec["timeline"] = {"t_s": tl["t_s"], **{k: tl.get(k, []) for k in TIMELINE_COUNTS},
                       **sampled}
    limit = h.group.limit_bytes if h.group is not None else None
    rec["steady"] = steady.verdict(tl["t_s"], tl["active"], warmup_s,
                                   [u for u in usage if u is not None] or None, limit)
    # None: recorded, never rerun
    rec["other_cpu"] = meter.verdict(settings.get("other_cpu_max", 0.5))
    rec["boot_id"] = results.boot_id()
    if "parts" in res:
        rec["parts"] = res["parts"]
    judged_at, judged = sampler.judged or (None, before)
    if "disks" in judged and "disks" in after:
        window = t_after - judged_at if judged_at is not None else elapsed
        rec["disk_time"] = disktime.disk_time(disktime.summed(judged["disks"]),
                                              disktime.summed(after["disks"]), window)
    else:
        rec["disk_time"] = None
    rec["queue_wait_ms"] = disktime.queue_wait(judged.get("daemon"), after.get("daemon"))
    if "disk" in before and "disk" in after:
        whole = elapsed + warmup_s
        db = _diff(before["disk"], after["disk"], "bytes")
        busy = _diff(before["disk"], after["disk"], "busy_s")
        reads = _diff(before["disk"], after["disk"], "reads")
        rec["disk_mb_per_s"] = db / whole / 1e6 if db is not None else None
        rec["disk_utilisation"] = busy / whole if busy is not None else None
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
    rec["pass"] = stats.probe_passed(rec, settings.get("max_fail", 0.3))
    return rec
