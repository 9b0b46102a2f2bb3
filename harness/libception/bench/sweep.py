"""Prefetch size sweep (paper Figs. 12-13): 0.5 to 8 MiB, with and without serialization."""
import os

from .. import sizes
from . import common, plots_common

SIZES = ["512K", "1M", "2M", "4M", "8M"]


def settings(quick):
    tunables, source = common.best_tunables("nginx")
    return {"library": {"preset": "sd", "count": 60 if quick else common.FULL_VIDEOS, "seed": 1},
            "memory_ratio": common.MEMORY_RATIO, "drive": "wd-red", "server": "nginx",
            "tunables": tunables, "tunables_source": source,
            "sizes": SIZES[1:4] if quick else SIZES,
            "search": common.search_settings(quick, start=2 if quick else 6)}


def steps(s):
    return 5 * (1 + 2 * len(s["sizes"]))


def run(rig, s):
    lib = common.make_library(rig, **s["library"])
    base = {"server": s["server"], "tunables": s["tunables"], "library": lib,
            "drive": s["drive"], "memory_limit": common.memory_limit(lib, s["memory_ratio"])}
    van = rig.max_rate({**base, "mode": "vanilla"}, "vanilla", s["search"], {"config": "vanilla"})
    rows = [common.row("vanilla", van, van.get("answer"))]
    series = {"prefetch + serialize": [], "prefetch only": []}
    for size in s["sizes"]:
        for label, mode in (("prefetch + serialize", "libception"), ("prefetch only", "prefetch")):
            if not rig.wants(f"{mode}-{size}"):
                continue
            o = rig.max_rate({**base, "mode": mode, "prefetch": size}, f"{mode}-{size}",
                             s["search"], {"config": mode, "prefetch": size})
            rows.append(common.row(f"{label} {size}", o, van.get("answer")))
            series[label].append((sizes.parse(size) // 1024, o.get("answer")))
    common.print_table(rows, rig.log_plain)
    plots_common.sweep_plot(os.path.join(rig.out, "sweep-rates.png"), series, van.get("answer"),
                            "prefetch size (KiB)", "nginx: prefetch size (paper Figs. 12-13)")
    return 0
