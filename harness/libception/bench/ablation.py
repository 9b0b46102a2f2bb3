"""Ablation (paper Fig. 11): nginx vanilla, serialize only, prefetch only, and both.

Same library, memory limit, drive, seeds and nginx configuration in every
run; only LIBCEPTION_MODE changes ("serialize": the daemon serializes
reads at their own size; "prefetch": the library enlarges reads itself,
in-process, without the daemon; "libception": both), plus both with the
library's asynchronous look-ahead (LIBCEPTION_LOOKAHEAD=1), which is not in
the paper.
"""
import os

from . import common

CONFIGS = [("vanilla", "vanilla", False), ("serialize only", "serialize", False),
           ("prefetch only", "prefetch", False), ("serialize + prefetch", "libception", False),
           ("serialize + prefetch + look-ahead", "libception", True)]


def settings(quick):
    tunables, source = common.best_tunables("nginx")
    return {"library": {"preset": "sd", "count": 60 if quick else common.FULL_VIDEOS, "seed": 1},
            "memory_ratio": common.MEMORY_RATIO, "drive": "wd-red", "server": "nginx",
            "tunables": tunables, "tunables_source": source, "prefetch": "2M",
            "search": common.search_settings(quick, start=2 if quick else 6)}


def steps(s):
    return 6 * len(CONFIGS)


def run(rig, s):
    lib = common.make_library(rig, **s["library"])
    base = {"server": s["server"], "tunables": s["tunables"], "library": lib,
            "drive": s["drive"], "memory_limit": common.memory_limit(lib, s["memory_ratio"])}
    outcomes, rows = {}, []
    base_rate = None
    for label, mode, lookahead in CONFIGS:
        if mode != "vanilla" and not rig.wants(label):
            continue
        cfg = {**base, "mode": mode}
        if mode != "vanilla":
            cfg["prefetch"] = s["prefetch"]
        if lookahead:
            cfg["lookahead"] = True
        o = rig.max_rate(cfg, label.replace(" ", ""), s["search"], {"config": label})
        outcomes[label] = o
        if mode == "vanilla":
            base_rate = o.get("answer")
        rows.append(common.row(label, o, base_rate))
    common.print_table(rows, rig.log_plain)
    common.plot_rates(os.path.join(rig.out, "ablation-rates.png"), rows,
                      "nginx: serialization and prefetching (paper Fig. 11)")
    common.plot_probes(os.path.join(rig.out, "ablation-probes.png"), outcomes,
                       "failed sessions by offered rate")
    return 0
