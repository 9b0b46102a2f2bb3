"""nginx vs nginx under libception on an emulated WD Red, each in the same memory limit.

The one-command demonstration (`make demo`), indicative: one seed, 40 s
of warm-up and 60 s judged per probe, at most 7 rates per search (about
25 minutes), not the full method's steady-state probes.  An SD library on
an hddsim WD Red, nginx in its recorded best vanilla configuration, run
once plainly and once under libception (receptiond inside the same
cgroup), each configuration's maximum failure-free session rate found by
search; a side-by-side table, JSON and PNG plots.
"""
import os

from . import common


def settings(quick):
    count = 60 if quick else common.FULL_VIDEOS
    tunables, source = common.best_tunables("nginx")
    return {"library": {"preset": "sd", "count": count, "seed": 1},
            "memory_ratio": common.MEMORY_RATIO, "drive": "wd-red",
            "server": "nginx", "tunables": tunables, "tunables_source": source,
            "prefetch": "2M", "method": "indicative",
            "search": {**common.search_settings(quick, start=2 if quick else 6),
                       **({} if quick else DEMO_PROBE)}}


# Bounded to ~25 minutes: one seed, a short warm-up from a cold start (a
# past's fill would add ~1.5 min a probe), at most 7 rates per search,
# and no rerun of probes disturbed by other load (recorded, not
# repeated).  Its numbers are indicative, not the method's
# (docs/benchmark.md).
DEMO_PROBE = {"warmup_s": 40, "duration": 60, "seeds": 1, "max_probes": 7,
              "other_cpu_max": None, "past_s": 0}


def steps(s):
    return 14


def run(rig, s):
    lib = common.make_library(rig, **s["library"])
    limit = common.memory_limit(lib, s["memory_ratio"])
    rig.log(f"library {os.path.basename(lib)}: {common.rigmod.library_bytes(lib) / 1e9:.2f} GB; "
            f"memory limit {limit / 2**20:.0f} MiB (1/{round(1 / s['memory_ratio'])} of the "
            f"library, as the paper's 8 GB for 260 GB)")
    rig.log(f"nginx tunables: {s['tunables'] or 'defaults'} ({s['tunables_source']})")
    base = {"server": s["server"], "tunables": s["tunables"], "library": lib,
            "drive": s["drive"], "memory_limit": limit}
    outcomes = {}
    van = rig.max_rate({**base, "mode": "vanilla"}, "vanilla", s["search"],
                       {"config": "nginx vanilla"})
    outcomes["nginx vanilla"] = van
    # Start libception's search where vanilla stopped: the bracket still
    # extends both ways, so this only saves probes.
    lc_search = dict(s["search"], start=van.get("answer") or s["search"]["start"])
    lc = rig.max_rate({**base, "mode": "libception", "prefetch": s["prefetch"]}, "libception",
                      lc_search, {"config": "nginx libception"})
    outcomes["nginx libception"] = lc
    rows = [common.row("nginx vanilla", van, van.get("answer")),
            common.row(f"nginx libception {s['prefetch']}", lc, van.get("answer"))]
    common.print_table(rows, rig.log_plain)
    common.plot_rates(os.path.join(rig.out, "demo-rates.png"), rows,
                      "nginx on an emulated WD Red: max failure-free rate")
    common.plot_throughput(os.path.join(rig.out, "demo-throughput.png"), rows,
                           "server and disk throughput (paper Fig. 8)")
    common.plot_probes(os.path.join(rig.out, "demo-probes.png"), outcomes,
                       "failed sessions by offered rate")
    return 0
