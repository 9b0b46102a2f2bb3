"""The maximum failure-free rate of one configuration.

The pass rule is decided before the run (stats.rate_verdict): a rate
passes when every seed (seed, seed+1, ..., `seeds` of them) passes, i.e.
its probe (probe.py) fails at most `max_fail` percent of its judged
sessions with no integrity error (a wrong byte); the seeds stop at the
first failing one unless `all_seeds` (a comparison's bootstrap over
seeds, stats.py, needs every verdict).  The
bracketing differs from vidload's fixed [LO, HI] bisection so that no
probe is spent far from the answer: start at a guess, double (or halve)
until a rate fails (or passes), then bisect until the bracket is within
`rel_resolution` of its lower end (or `max_probes` rates were tried);
`growth` replaces the doubling when the start is a measured answer.
"""
from . import stats
from .probe import check_alive, judged_seconds, run_load, settle


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
    res = run_load(h, cfg, {**settings, "duration": duration, "warmup_s": 0}, rate,
                int(settings.get("seed", 1)))
    rig.progress.end()
    check_alive(h)
    rig.progress.line(f"{tag}: warm-up {rate:g}/s -> failed {res['failed_pct']:.2f}%, "
                      f"{res['mb_per_s']:.1f} MB/s to clients (not a probe)")
    return {"rate": rate, "duration": duration, "failed_pct": res["failed_pct"],
            "mb_per_s": res["mb_per_s"]}


def _probe_line(rig, tag, rec):
    disk = rec.get("disk_time") or {}
    st = rec.get("steady") or {}
    before = stats.unjudged_failed_pct(rec)
    rig.progress.line(
        f"{tag}: {rec['rate']:g}/s seed {rec['seed']} -> failed {rec['failed_pct']:.2f}%, "
        f"{rec['mb_per_s']:.1f} MB/s to clients"
        + (f", disk {disk['mb_per_s']:.1f} MB/s busy {disk['busy_share']:.0%} "
           f"transfer {disk['transfer_share'] or 0:.0%}" if disk.get("mb_per_s") is not None
           else "")
        + (f" (after {rec['settle_s']:g} s for the disk to go idle)"
           if rec["settle_s"] >= 5 else "")
        + ("" if st.get("steady", True) else f" [not steady: {'; '.join(st['reasons'])}]")
        + (f" [before the judged window {before:.2f}% failed]" if before else "")
        + (" [rerun: other load]" if rec.get("rerun") else "")
        + f": {'pass' if rec['pass'] else 'FAIL'}")


ROUNDING = 1e-3   # a rate's rounding, relative to the lowest rates searched (~1/s)


def next_rate(lo, hi, start, floor, cap, rel, growth=2.0):
    """The bracketing: the next rate to probe given the highest passed
    (lo) and lowest failed (hi) so far, or None when the search is done.
    Until both ends are known it steps by `growth`: 2 from a guess, less
    from a start that is a measured answer (a comparison's round, a
    tuning candidate), where doubling spends two or three rates far
    above the answer."""
    if lo is None and hi is None:
        return round(start, 3)
    if hi is None:
        return None if lo >= cap else round(min(lo * growth, cap), 3)
    if lo is None:
        return None if hi / growth < floor else round(hi / growth, 3)
    # rates are rounded to 3 decimals: a step of 1 + rel from 6.117 is
    # 6.729, 10.005% up, and without the slack that one step was bisected
    # again while another start's was not, a finer answer for some
    # configurations than for others
    return None if (hi - lo) / lo <= rel + ROUNDING else round((lo + hi) / 2, 3)


def judge_rate(rig, h, cfg, settings, tag, rate, point=None):
    """Every seed's probe at `rate` (stopping at the first failing one,
    unless all_seeds): (passed, [probe records])."""
    seeds = int(settings.get("seeds", 1))
    first = int(settings.get("seed", 1))
    records, passed = [], {}
    for seed in range(first, first + seeds):
        what = (f"{tag}: {rate:g} sessions/s, warm-up {settings.get('warmup_s') or 0:g} s + "
                f"{judged_seconds(settings, rate):g} s judged (seed {seed})")
        rec = rig.measure(h, cfg, settings, rate, seed, point, what)
        _probe_line(rig, tag, rec)
        records.append(rec)
        passed[seed] = rec["pass"]
        if not rec["pass"] and not settings.get("all_seeds"):
            break
    return bool(stats.rate_verdict(passed, min_seeds=seeds)), records


def max_failure_free(rig, h, cfg, settings, tag, point=None):
    """Search and return {"answer": rate or None, "failed_above",
    "at_answer": probe record, "rates": [{"rate", "pass", "seeds"}],
    "probes": [...]} (answer None: even the lowest rate tried failed).
    `max_probes` bounds the rates tried (the demo's bounded time)."""
    warmup = warm_up(rig, h, cfg, settings, tag)
    start = float(settings["start"])
    floor = float(settings.get("floor", start / 16))
    cap = float(settings.get("cap", start * 16))
    rel = float(settings.get("rel_resolution", 0.1))
    growth = float(settings.get("growth", 2.0))
    max_rates = settings.get("max_probes")
    # `passed`: a rate already shown to pass (a tuning challenge's probe)
    lo, hi = settings.get("passed"), None
    best = None
    probes, rates = [], []
    while max_rates is None or len(rates) < int(max_rates):
        rate = next_rate(lo, hi, start, floor, cap, rel, growth)
        if rate is None:
            break
        ok, records = judge_rate(rig, h, cfg, settings, tag, rate, point)
        probes += records
        rates.append({"rate": rate, "pass": ok, "seeds": [r["seed"] for r in records]})
        if ok:
            lo = rate
            best = records[-1]
        else:
            hi = rate
    out = {"answer": lo, "failed_above": hi, "at_answer": best, "rates": rates,
           "probes": probes}
    if warmup:
        out["warmup"] = warmup
    if settings.get("passed") is not None:
        out["passed_before"] = settings["passed"]
    return out
