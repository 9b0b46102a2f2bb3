"""Automatic prefetch sizing (issue 6): fixed sweep with accounting, competitive, adaptive.

Parts (names for --only):
  profile       receptiond-profile on a mount of the library: the
                competitive size (switch cost x rate) the other parts use
  fixed-SIZE    max failure-free rate with one size for all (the bitrate
                policy with scale=none: fixed, plus the accounting), with
                the useful / wasted / evicted bytes at that rate
  competitive   the competitive policy from the profile (slow start), with
                the profile's concurrency
  competitive-serial  the same with one read at a time
  adaptive-SIZE the adaptive policy started below and above the best fixed
                size (settings "adaptive_starts"; "around" takes the sweep's
                neighbours of the best size, or its ends without a sweep)
  fixed-SIZE-again  the best fixed size once more after the adaptive
                starts (settings "fixed_again"): the run's A/A spread
  fixed-SIZE-rN, adaptive-SIZE-rN
                round N of the best fixed size and the adaptive starts
                (settings "rounds"): each start's ratio to the fixed size
                of its own round, averaged over the rounds
  mixed-none, mixed-sqrt, mixed-linear
                the mixed SD/HD library with the best fixed size for the
                reference (95th percentile) bitrate and no / sqrt / linear scaling; settings
                "mixed_size" gives that size when the fixed sweep is not
                run (`--only mixed --set mixed_size=1M`)
  trace-SIZE
                the adaptive policy started at SIZE at the best fixed size's
                rate (settings "trace_share", "trace_rate") for a long run:
                its size and the disk's throughput over time
  trace-fixed-SIZE
                a fixed size at the same rate, for reference (settings
                "trace_fixed": the sizes)
The adaptive interval is shortened from the paper's 180 s (settings
"adaptive"): a probe here lasts a minute, not an hour.
"""
import os
import statistics
import threading
import time

from .. import daemon, hddsim, plots, sizes, vidload
from . import common

MIB = 2**20
PROBES = 6   # a max-rate search's probes, as steps() counts them


def wanted(rig, label, steps=PROBES):
    """Whether --only lets `label` run; if not, its steps leave the ETA."""
    if rig.wants(label):
        return True
    rig.progress.drop(steps)
    return False


def settings(quick):
    tunables, source = common.best_tunables("nginx")
    return {"library": {"preset": "sd", "count": 60 if quick else 1000, "seed": 1},
            "memory_ratio": common.MEMORY_RATIO, "drive": "wd-red", "server": "nginx",
            "tunables": tunables, "tunables_source": source,
            "sizes": ["1M", "2M", "4M"] if quick else ["512K", "1M", "2M", "4M", "8M"],
            "adaptive": ("interval=5s,ramp=1s" if quick else "interval=20s,ramp=5s")
            + ",compare=side-by-side",
            # "around": one sweep step below and one above the best fixed
            # size (beyond the sweep's ends: half the smallest, twice the
            # largest), so the adaptive policy starts once from each side
            "adaptive_starts": "around",
            # measure the best fixed size again after the adaptive starts:
            # the run's own A/A spread (machine drift over the half hour
            # between the two), against which to read the adaptive ratios
            "fixed_again": False,
            # measure the best fixed size and the adaptive starts this many
            # times, alternating: a start's ratio to the fixed size of its
            # own round, averaged over rounds, resolves what one run's
            # noise (a tenth at times) cannot
            "rounds": 1,
            "profile_budget": 15 if quick else 60,
            "search": {**common.search_settings(quick, start=2 if quick else 4,
                                                duration=20 if quick else 40),
                       "rel_resolution": 0.25 if quick else 0.15},
            "trace_duration": 40 if quick else 180,
            # the traces' rate as a share of the best fixed size's: a probe's
            # answer is not sustained for minutes (sessions last minutes, so
            # a longer run holds more of them at once)
            "trace_share": 1.0,
            # or sessions/s, whatever the sweep found (None: by trace_share)
            "trace_rate": None,
            # fixed sizes traced at the same rate, for reference
            "trace_fixed": [],
            "mixed_library": {"preset": "mixed", "count": 60 if quick else 500, "seed": 1},
            # None: the best size of this run's fixed sweep
            "mixed_size": None,
            "scales": ["none", "sqrt", "linear"],
            "trace_every_s": 2,
            # hddsim Mount options for every configuration ({"trace": true}:
            # each one's command trace, with the pid that asked, in its work dir)
            "hddsim": {}}


def steps(s):
    starts = 2 if s["adaptive_starts"] == "around" else len(s["adaptive_starts"])
    again = (1 if s["fixed_again"] else 0) + (s["rounds"] - 1) * (1 + starts)
    return PROBES * (len(s["sizes"]) + 2 + starts + again + len(s["scales"])) + starts + 1


def adaptive_args(s, starts):
    """The adaptive policy's arguments: the scenario's, with the step
    halved from the paper's 512K until no start lies below it, the same
    step for every start.  Otherwise a 256K start rounds up to 512K, and
    on a scaled-down library whose best size is 512K the run "from below"
    would start at the best size."""
    step, low = 512 * 1024, min(sizes.parse(x) for x in starts)
    while step > low and step > 64 * 1024:
        step //= 2
    return s["adaptive"] if step == 512 * 1024 else f"{s['adaptive']},step={sizes.text(step)}"


def adaptive_starts(s, best_size):
    """The sizes the adaptive policy starts from: the settings' list, or
    for "around" the sweep's neighbours of the best fixed size."""
    if s["adaptive_starts"] != "around":
        return list(s["adaptive_starts"])
    ladder = sorted(sizes.parse(x) for x in s["sizes"])
    if best_size is None:
        return [sizes.text(ladder[0]), sizes.text(ladder[-1])]
    i = ladder.index(sizes.parse(best_size))
    below = ladder[i - 1] if i > 0 else ladder[0] // 2
    above = ladder[i + 1] if i + 1 < len(ladder) else ladder[-1] * 2
    return [sizes.text(below), sizes.text(above)]


def measure_profile(rig, s, lib):
    """Profile the emulated drive under this library once; the JSON is
    kept in the output directory (and reused with --resume)."""
    point = {"part": "profile", "drive": s["drive"], "budget": s["profile_budget"]}
    path = os.path.join(rig.out, f"profile-{s['drive']}.json")
    done = rig.results.get(point)
    if done is not None and os.path.exists(path):
        return path, done["profile"]
    m = hddsim.Mount(os.path.join(rig.work, "profile-mnt"), s["drive"], lib)
    handle = rig.cleanup.push(f"unmount {m.path}", m.unmount)
    try:
        prof = common.profile_device(rig, point, path, m.path, s["profile_budget"])
    finally:
        rig.cleanup.run_now(handle)
    rig.log_plain(f"libception bench: profile {s['drive']}: competitive size "
                  f"{prof['competitive_size'] / MIB:.2f} MiB = switch {prof['switch_s'] * 1e3:.2f} "
                  f"ms x {prof['rate'] / 1e6:.1f} MB/s; concurrency {prof['concurrency']}")
    return path, prof


def _acct(stats):
    try:
        return stats["devices"][0]["policy"]["accounting"]["total"]
    except (KeyError, IndexError, TypeError):
        return None


def accounting_at_answer(outcome):
    """The accounting over the probe at the answer: its daemon totals minus
    the previous probe's (the daemon lives for the whole search)."""
    probes = outcome.get("probes") or []
    best = outcome.get("at_answer")
    if not best or best not in probes:
        return None
    i = probes.index(best)
    after = _acct(best.get("daemon_stats"))
    before = _acct(probes[i - 1].get("daemon_stats")) if i else None
    if after is None:
        return None
    keys = ("demanded_bytes", "read_bytes", "prefetched_bytes", "useful_bytes", "wasted_bytes",
            "evicted_bytes", "evicted_needed_bytes", "evicted_windows", "dropped_bytes",
            "reread_bytes")
    d = {k: after.get(k, 0) - (before.get(k, 0) if before else 0) for k in keys}
    d["miss_ratio"] = d["read_bytes"] / d["demanded_bytes"] if d["demanded_bytes"] else None
    return d


def inode_kinds(rig, s, lib):
    """{inode: "sd" or "hd"} for the files of a mixed library as hddsim
    numbers them (its layout is a function of the library file), so the
    daemon's per-stream figures can be told apart by kind; recorded once."""
    point = {"part": "inodes", "library": os.path.basename(lib)}
    done = rig.results.get(point)
    if done is not None:
        return {int(k): v for k, v in done["kinds"].items()}
    m = hddsim.Mount(os.path.join(rig.work, "inodes-mnt"), s["drive"], lib)
    handle = rig.cleanup.push(f"unmount {m.path}", m.unmount)
    try:
        kinds = {}
        for kind in ("sd", "hd"):
            d = os.path.join(m.path, kind)
            for name in os.listdir(d) if os.path.isdir(d) else []:
                kinds[os.stat(os.path.join(d, name)).st_ino] = kind
    finally:
        rig.cleanup.run_now(handle)
    rig.results.add(point, kinds={str(k): v for k, v in kinds.items()})
    return kinds


def _median(xs):
    xs = sorted(xs)
    if not xs:
        return None
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def streams_by_kind(outcome, kinds):
    """The daemon's live streams at the end of the probe at the answer
    (or of the last probe when none passed), by kind: how many, the
    median inferred bitrate (B/s) of those whose bitrate is known and of
    those older than 40 s (past a player's opening burst), and the median
    last window beyond the ask (B)."""
    probes = outcome.get("probes") or []
    at = outcome.get("at_answer") or (probes[-1] if probes else None)
    try:
        pol = at["daemon_stats"]["devices"][0]["policy"]
        streams = pol["stream_list"]
    except (KeyError, IndexError, TypeError):
        return None
    # (results before the percentile reference called it max_bitrate)
    out = {"ref_bitrate": pol.get("ref_bitrate", pol.get("max_bitrate"))}
    for kind in ("sd", "hd"):
        mine = [x for x in streams if kinds.get(x["ino"]) == kind]
        known = [x for x in mine if x["bitrate"]]
        out[kind] = {"streams": len(mine), "known": len(known),
                     "bitrate": _median([x["bitrate"] for x in known]),
                     "bitrate_40s": _median([x["bitrate"] for x in known if x["age_s"] >= 40]),
                     "window": _median([x["window"] for x in known if x["window"]]),
                     "age_s": _median([x["age_s"] for x in known])}
    return out


def print_kinds(rows, out):
    out("libception bench: " + f"{'configuration':<22} {'kind':>4} {'streams':>8} "
        f"{'known':>6} {'kB/s':>8} {'>=40s':>8} {'window':>8} {'age s':>6} {'ref kB/s':>9}"
        "   (live streams, medians, end of the probe at the answer)")

    def f(v, scale, fmt):
        return "-" if v is None else format(v / scale, fmt)
    for label, k in rows:
        if not k:
            out(f"libception bench: {label:<22} (no stream list)")
            continue
        for kind in ("sd", "hd"):
            v = k[kind]
            win = "-" if v["window"] is None else f(v["window"], 1024, ".0f") + "K"
            out(f"libception bench: {label:<22} {kind:>4} {v['streams']:>8} {v['known']:>6} "
                f"{f(v['bitrate'], 1e3, '.1f'):>8} {f(v['bitrate_40s'], 1e3, '.1f'):>8} "
                f"{win:>8} {f(v['age_s'], 1, '.0f'):>6} "
                f"{f(k['ref_bitrate'], 1e3, '.0f'):>9}")


SETTLED_BAND = 512 << 10   # the paper's step


def settled_at(series, final, band):
    """Seconds into a trace after which the size stayed within band of its
    final value (the convergence time of the paper's Figs. 3-4); None
    without a final size."""
    if not final or not series:
        return None
    settled = series[0]["t"]
    for before, p in zip(series, series[1:]):
        if before["size"] is None or abs(before["size"] - final) > band:
            settled = p["t"]
    return settled


def trace(rig, base, s, label, policy, what, rate):
    """A policy at a fixed rate: (t, size, target, disk MB/s) every few
    seconds, and vidload's result.  what: the policy's part of the result's
    point ({"start", "adaptive"} or {"fixed"})."""
    point = {"part": "trace", **what, "rate": rate, "duration": s["trace_duration"]}
    done = rig.results.get(point)
    if done is not None:
        rig.progress.skip(label)
        return done
    cfg = {**base, "mode": "libception", "policy": policy}
    h = rig.setup(cfg, label)
    series, stop = [], threading.Event()

    def poll():
        t0 = time.monotonic()
        last = None
        while not stop.wait(s["trace_every_s"]):
            try:
                st = daemon.stats(h.socket)
                disk = h.mount.stats()
            except Exception:   # the daemon or mount going away at the end
                continue
            pol = st["devices"][0]["policy"] if st.get("devices") else {}
            now = time.monotonic() - t0
            mbps = busy = None
            if last is not None and now > last[0]:
                mbps = (disk.get("bytes", 0) - last[1]) / (now - last[0]) / 1e6
                busy = (disk.get("busy_s", 0) - last[2]) / (now - last[0])
            last = (now, disk.get("bytes", 0), disk.get("busy_s", 0))
            sample = {"t": round(now, 1), "size": pol.get("size"), "target": pol.get("target"),
                      "disk_mb_per_s": mbps, "disk_busy": busy, "reason": pol.get("reason")}
            if h.group is not None:
                sample.update(h.group.file_lists())
            series.append(sample)

    poller = threading.Thread(target=poll, daemon=True)
    try:
        rig.progress.begin(f"{label}: {rate:g} sessions/s for {s['trace_duration']} s")
        poller.start()
        res = vidload.run(h.url, base["library"], rate, s["trace_duration"], quiet=True)["result"]
        rig.progress.end()
        final = daemon.stats(h.socket)
    finally:
        stop.set()
        poller.join()
        rig.teardown(h)
    pol = final["devices"][0]["policy"] if final.get("devices") else {}
    record = {"result": {k: res.get(k) for k in ("failed_pct", "mb_per_s", "achieved_rate",
                                                  "started", "failed")},
              "series": series, "final_size": pol.get("size"), "changes": pol.get("changes"),
              "scores": pol.get("scores"),
              "accounting": (pol.get("accounting") or {}).get("total"),
              "settled_at_s": settled_at(series, pol.get("size"), SETTLED_BAND)}
    rig.results.add(point, **record)
    return rig.results.get(point)


def run(rig, s):
    lib = common.make_library(rig, **s["library"])
    base = {"server": s["server"], "tunables": s["tunables"], "library": lib,
            "drive": s["drive"], "memory_limit": common.memory_limit(lib, s["memory_ratio"]),
            "hddsim": s["hddsim"]}
    prof_path, prof = measure_profile(rig, s, lib)
    rows, acct_rows, outcomes = [], [], {}

    def measure(label, policy, point):
        if not wanted(rig, label):
            return None
        o = rig.max_rate({**base, "mode": "libception", "policy": policy}, label, s["search"],
                         point)
        outcomes[label] = o
        return o

    fixed = {}
    # the sizes --only leaves out leave the ETA now, not as the sweep gets there
    for size in [z for z in s["sizes"] if wanted(rig, f"fixed-{z}")]:
        o = measure(f"fixed-{size}", f"bitrate:scale=none,size={size}",
                    {"config": "fixed", "size": size})
        if o is not None:
            fixed[size] = o
    best_size = max(fixed, key=lambda k: fixed[k].get("answer") or 0) if fixed else None
    best_rate = fixed[best_size].get("answer") if best_size else None
    for size, o in fixed.items():
        rows.append(common.row(f"fixed {size}", o, best_rate))
        acct_rows.append((f"fixed {size}", accounting_at_answer(o)))
    o = measure("competitive", f"competitive:profile={prof_path}",
                {"config": "competitive", "profile_switch_s": prof["switch_s"],
                 "profile_rate": prof["rate"]})
    if o is not None:
        rows.append(common.row(f"competitive {prof['competitive_size'] / MIB:.2f}M", o, best_rate))
        acct_rows.append(("competitive", accounting_at_answer(o)))
    # The profile's concurrency against strict serialization, same size.
    if prof.get("concurrency", 1) <= 1:
        rig.progress.drop(PROBES)
    else:
        o = measure("competitive-serial", f"competitive:profile={prof_path},concurrency=1",
                    {"config": "competitive", "concurrency": 1,
                     "profile_switch_s": prof["switch_s"], "profile_rate": prof["rate"]})
        if o is not None:
            rows.append(common.row("competitive, 1 at a time", o, best_rate))
            acct_rows.append(("competitive serial", accounting_at_answer(o)))
    starts = adaptive_starts(s, best_size)
    args = adaptive_args(s, starts)
    # Round 1 is the sweep's best size and the starts; each further round
    # measures the best size and the starts once more, in the same order,
    # so that every start has a fixed answer from the same half hour.
    answers = {}   # (configuration, round) -> sessions/s
    for r in range(1, s["rounds"] + 1):
        tail, point = ("", {}) if r == 1 else (f"-r{r}", {"round": r})
        if r == 1:
            answers[("fixed", r)] = best_rate
        elif not best_size:
            rig.progress.drop(PROBES)
        else:
            o = measure(f"fixed-{best_size}{tail}", f"bitrate:scale=none,size={best_size}",
                        {"config": "fixed", "size": best_size, **point})
            if o is not None:
                rows.append(common.row(f"fixed {best_size}, round {r}", o, best_rate))
                acct_rows.append((f"fixed {best_size}, round {r}", accounting_at_answer(o)))
                answers[("fixed", r)] = o.get("answer")
        for start in starts:
            o = measure(f"adaptive-{start}{tail}", f"adaptive:start={start},{args}",
                        {"config": "adaptive", "start": start, "args": args, **point})
            if o is None:
                continue
            final = (o.get("probes") or [{}])[-1].get("daemon_stats") or {}
            size = ((final.get("devices") or [{}])[0].get("policy") or {}).get("size")
            name = f"adaptive from {start}" + (f", round {r}" if r > 1 else "")
            rows.append(common.row(name + (f" (end {size / MIB:.1f}M)" if size else ""), o,
                                   best_rate))
            acct_rows.append((name, accounting_at_answer(o)))
            answers[(f"adaptive from {start}", r)] = o.get("answer")
    if s["fixed_again"] and not best_size:
        rig.progress.drop(PROBES)
    elif s["fixed_again"]:
        o = measure(f"fixed-{best_size}-again", f"bitrate:scale=none,size={best_size}",
                    {"config": "fixed", "size": best_size, "again": 1})
        if o is not None:
            rows.append(common.row(f"fixed {best_size}, again", o, best_rate))
            acct_rows.append((f"fixed {best_size}, again", accounting_at_answer(o)))
    if s["rounds"] > 1:
        print_rounds(answers, [f"adaptive from {x}" for x in starts], s["rounds"], rig.log_plain)
    if rows:
        common.print_table(rows, rig.log_plain)
        print_accounting(acct_rows, rig.log_plain)
        common.plot_rates(os.path.join(rig.out, "sizing-rates.png"), rows,
                          "max failure-free sessions/s by prefetch sizing (ratio: to best fixed)")

    # Per-bitrate sizing on the mixed SD/HD library (SYSTOR 2014 §5): one
    # size for all vs size ~ sqrt(bitrate) vs size ~ bitrate, the reference
    # bitrate getting the best fixed size.
    msize = s.get("mixed_size") or best_size
    want_mixed = any(rig.wants(f"mixed-{m}") for m in s["scales"])
    if not want_mixed or not msize:
        rig.progress.drop(PROBES * len(s["scales"]))
    if want_mixed and not msize:
        rig.log("mixed: skipped: no size for the reference bitrate (run the fixed sweep, "
                "or --set mixed_size=SIZE)")
    elif want_mixed:
        mixed = common.make_library(rig, **s["mixed_library"])
        mbase = {**base, "library": mixed,
                 "memory_limit": common.memory_limit(mixed, s["memory_ratio"])}
        kinds = inode_kinds(rig, s, mixed)
        mrows, macct, mkinds = [], [], []
        first = None
        for scale in s["scales"]:
            label = f"mixed-{scale}"
            if not wanted(rig, label):
                continue
            o = rig.max_rate({**mbase, "mode": "libception",
                              "policy": f"bitrate:scale={scale},size={msize}"}, label,
                             s["search"], {"config": "mixed", "scale": scale, "size": msize})
            first = first or o.get("answer")
            mrows.append(common.row(f"mixed {msize} {scale}", o, first))
            macct.append((f"mixed {scale}", accounting_at_answer(o)))
            mkinds.append((f"mixed {scale}", streams_by_kind(o, kinds)))
        common.print_table(mrows, rig.log_plain)
        print_accounting(macct, rig.log_plain)
        print_kinds(mkinds, rig.log_plain)
        common.plot_rates(os.path.join(rig.out, "sizing-mixed.png"), mrows,
                          "mixed SD/HD: per-bitrate scaling (ratio: to one size for all)")

    traces = {}
    trace_rate = s["trace_rate"] or (round(best_rate * s["trace_share"], 2) if best_rate else None)
    for start in starts:
        if trace_rate and wanted(rig, f"trace-{start}", 1):
            traces[f"from {start}"] = trace(rig, base, s, f"trace-{start}",
                                            f"adaptive:start={start},{args}",
                                            {"start": start, "adaptive": args}, trace_rate)
    # fixed sizes at the same rate, for reference: what the adaptive size
    # should have converged to at this load
    for size in s["trace_fixed"]:
        if trace_rate and rig.wants(f"trace-fixed-{size}"):
            traces[f"fixed {size}"] = trace(rig, base, s, f"trace-fixed-{size}",
                                            f"bitrate:scale=none,size={size}", {"fixed": size},
                                            trace_rate)
    if traces:
        plots.lines(os.path.join(rig.out, "sizing-adaptive-size.png"),
                    {k: [(p["t"], (p["size"] or 0) / MIB) for p in v["series"]]
                     for k, v in traces.items()},
                    "seconds", "prefetch size (MiB)",
                    f"adaptive size over time at {trace_rate:g} sessions/s (paper Figs. 3-4)")
        plots.lines(os.path.join(rig.out, "sizing-adaptive-disk.png"),
                    {k: [(p["t"], p["disk_mb_per_s"]) for p in v["series"]]
                     for k, v in traces.items()},
                    "seconds", "disk MB/s", "disk throughput under the adaptive policy")
        for k, v in traces.items():
            r = v["result"]
            settled = v.get("settled_at_s")
            rig.log_plain(f"libception bench: trace {k}: final size "
                          f"{(v['final_size'] or 0) / MIB:.2f} MiB after {v['changes'] or 0} changes, "
                          f"within 512K of it from {settled if settled is not None else '-'} s on; "
                          f"failed {r['failed_pct']:.2f}%, {r['mb_per_s']:.1f} MB/s to clients")
    return 0


def round_ratios(answers, config, rounds):
    """The config's answer over the fixed size's of the same round, for
    each round in which both were measured."""
    return [answers[(config, r)] / answers[("fixed", r)] for r in range(1, rounds + 1)
            if answers.get((config, r)) and answers.get(("fixed", r))]


def print_rounds(answers, configs, rounds, out):
    """Each adaptive start's ratio to the fixed size, round by round, and
    their mean with its standard error; the fixed size's own rounds
    against its first, for the spread."""
    fixed = [answers.get(("fixed", r)) for r in range(1, rounds + 1)]
    if fixed[0] and all(fixed):
        out("libception bench: rounds: fixed, against its round 1: "
            + " ".join(f"{x / fixed[0]:.2f}" for x in fixed))
    for config in configs:
        ratios = round_ratios(answers, config, rounds)
        if not ratios:
            continue
        mean = sum(ratios) / len(ratios)
        se = (statistics.stdev(ratios) / len(ratios) ** 0.5) if len(ratios) > 1 else None
        out(f"libception bench: rounds: {config} / fixed of the same round: "
            + " ".join(f"{x:.2f}" for x in ratios)
            + f"; mean {mean:.3f}" + ("" if se is None else f" +- {se:.3f}"))


def print_accounting(acct_rows, out):
    out("libception bench: " + f"{'configuration':<22} {'consumed':>9} {'read':>9} {'useful':>9} "
        f"{'wasted':>9} {'evicted':>9} {'needed':>9} {'dropped':>9} {'miss ratio':>10}   "
        "(MB, at the answer; needed: evicted, then missed by its stream)")
    for label, a in acct_rows:
        if not a:
            out(f"libception bench: {label:<22} (no accounting)")
            continue
        mb = {k: a[k] / 1e6 for k in a if k.endswith("_bytes")}
        out(f"libception bench: {label:<22} {mb['demanded_bytes']:>9.1f} {mb['read_bytes']:>9.1f} "
            f"{mb['useful_bytes']:>9.1f} {mb['wasted_bytes']:>9.1f} {mb['evicted_bytes']:>9.1f} "
            f"{mb['evicted_needed_bytes']:>9.1f} {mb['dropped_bytes']:>9.1f} "
            f"{'-' if a['miss_ratio'] is None else format(a['miss_ratio'], '.3f'):>10}")
