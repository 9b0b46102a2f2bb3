"""Chunked vs unchunked (chunking paper, Fig. 5 and Table 1): the same videos unchunked, in 2 MiB and in 0.5 MiB chunks.

hddsim places chunk files so that the same video data lies at the same
place on the platter in every layout; vidload asks for whole chunk files
instead of ranges.  nginx vanilla and under libception, per layout.
"""
import os

from . import common

LAYOUTS = [("unchunked", 0), ("2 MiB chunks", 2097152), ("0.5 MiB chunks", 524288)]


def settings(quick):
    tunables, source = common.best_tunables("nginx")
    return {"library": {"preset": "sd", "count": 60 if quick else common.FULL_VIDEOS, "seed": 1},
            "memory_ratio": common.MEMORY_RATIO, "drive": "wd-red", "server": "nginx",
            "tunables": tunables, "tunables_source": source, "prefetch": "2M",
            "modes": ["vanilla", "libception"],
            "search": common.search_settings(quick, start=2 if quick else 6)}


def steps(s):
    return 5 * len(LAYOUTS) * len(s["modes"])


def run(rig, s):
    rows = []
    base_rate = None
    for name, chunk in LAYOUTS:
        lib = common.make_library(rig, **{**s["library"], "chunk": chunk})
        limit = common.memory_limit(lib, s["memory_ratio"])
        for mode in s["modes"]:
            label = f"{mode} {name}"
            if not rig.wants(label):
                continue
            cfg = {"server": s["server"], "tunables": s["tunables"], "library": lib,
                   "drive": s["drive"], "memory_limit": limit, "mode": mode}
            if mode != "vanilla":
                cfg["prefetch"] = s["prefetch"]
            o = rig.max_rate(cfg, f"{mode}-chunk{chunk}", s["search"],
                             {"config": mode, "chunk": chunk})
            if base_rate is None:
                base_rate = o.get("answer")
            rows.append(common.row(label, o, base_rate))
    common.print_table(rows, rig.log_plain)
    common.plot_rates(os.path.join(rig.out, "chunking-rates.png"), rows,
                      "chunked vs unchunked layouts (chunking paper Fig. 5)")
    return 0
