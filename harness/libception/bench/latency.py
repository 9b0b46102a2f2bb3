"""Latency (paper Fig. 17): CDF of the time of each intercepted sendfile call, vanilla vs libception.

"Vanilla" runs nginx under the library in `track` mode (calls are only
counted and timed, nothing prefetched or serialized), searched for its
maximum failure-free rate R.  At that same R, one probe each of nginx
under libception, and of tracked nginx with the kernel tuning
(read_ahead_kb 2048, the paper's "aggressive kernel params").  The CDFs
come from receptiond's per-call histograms (bucket i: calls under 2^i us),
taken over the probe at R only.
"""
import os

from .. import plots
from . import common


def settings(quick):
    tunables, source = common.best_tunables("nginx")
    return {"library": {"preset": "sd", "count": 60 if quick else common.FULL_VIDEOS, "seed": 1},
            "memory_ratio": common.MEMORY_RATIO, "drive": "wd-red", "server": "nginx",
            "tunables": tunables, "tunables_source": source, "prefetch": "2M",
            "kernel_read_ahead_kb": 2048,
            "search": common.search_settings(quick, start=2 if quick else 6)}


def steps(s):
    return 8


def cdf(hist):
    """[(upper bound in us, cumulative share)] from a 2^i-us histogram."""
    total = sum(hist)
    if not total:
        return []
    out, acc = [], 0
    for i, n in enumerate(hist):
        acc += n
        if n:
            out.append((2 ** i, acc / total))
    return out


def _probe(rig, cfg, tag, s, rate):
    return rig.probe_at(cfg, tag, {"config": tag, "rate": rate}, s["search"], rate)


def run(rig, s):
    lib = common.make_library(rig, **s["library"])
    base = {"server": s["server"], "tunables": s["tunables"], "library": lib,
            "drive": s["drive"], "memory_limit": common.memory_limit(lib, s["memory_ratio"])}
    tracked = rig.max_rate({**base, "mode": "track"}, "vanilla-tracked", s["search"],
                           {"config": "vanilla (track)"})
    rate = tracked.get("answer") or s["search"]["start"]
    lc = _probe(rig, {**base, "mode": "libception", "prefetch": s["prefetch"]},
                    "libception", s, rate)
    kern = _probe(rig, {**base, "mode": "track", "read_ahead_kb": s["kernel_read_ahead_kb"]},
                      "kernel-tuned", s, rate)
    series = {}
    for label, rec in (("vanilla", tracked.get("at_answer") or {}),
                       ("libception", lc["probe"]),
                       (f"kernel read_ahead_kb={s['kernel_read_ahead_kb']}", kern["probe"])):
        hist = ((rec.get("calls") or {}).get("sendfile") or {}).get("hist") or []
        series[label] = cdf(hist)
        pts = series[label]
        med = next((x for x, share in pts if share >= 0.5), None)
        p99 = next((x for x, share in pts if share >= 0.99), None)
        rig.log_plain(f"libception bench: {label:<32} sendfile calls "
                      f"{sum(hist):>8}  median < {med} us  p99 < {p99} us  "
                      f"(at {rate:g} sessions/s, failed {rec.get('failed_pct', float('nan')):.2f}%)")
    plots.cdfs(os.path.join(rig.out, "latency-sendfile-cdf.png"), series,
               "sendfile call time (us, upper bound of log2 bucket)",
               f"nginx sendfile times at {rate:g} sessions/s (paper Fig. 17)")
    return 0
