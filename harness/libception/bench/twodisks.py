"""Two disks (paper section 7): two hddsim mounts, each with its own copy of the library; serialization per device.

As in the paper, the second disk holds a copy of the first disk's file
set and each session picks one disk at random (here: half the session
rate goes to each, one vidload per disk under its URL prefix), so no
video is cached twice.  The memory limit stays that of one library (the
same machine serves both disks).  Reported: each mode's two-disk maximum
failure-free rate over its one-disk rate (target >= 1.8 under libception).

nginx gets the recorded best vanilla configuration with twice its
workers, for both rows (so they differ only in disks): a worker blocked
on a miss serves nobody, and with eight of them shared by two disks'
queues, eight misses on one disk leave the other idle.  Measured
2026-11-25 under libception: with 8 workers 18 -> 24.3 sessions/s
(1.35x), with 16 workers 19.5 -> 35.4 (1.82x) (docs/results.md).
"""
import os

from . import common

DISKS = 2


def settings(quick):
    tunables, source = common.best_tunables("nginx")
    if isinstance(tunables.get("workers"), int):
        tunables = {**tunables, "workers": tunables["workers"] * DISKS}
        source += f"; workers x{DISKS}, one set per disk"
    return {"library": {"preset": "sd", "count": 60 if quick else common.FULL_VIDEOS, "seed": 1},
            "memory_ratio": common.MEMORY_RATIO, "drive": "wd-red", "server": "nginx",
            "tunables": tunables, "tunables_source": source, "prefetch": "2M",
            # a sizing policy instead of the fixed size, e.g. "adaptive"
            # (docs/prefetch-sizing.md); None: fixed "prefetch"
            "policy": None,
            "modes": ["libception"] if quick else ["vanilla", "libception"],
            "search": common.search_settings(quick, start=2 if quick else 6)}


def steps(s):
    return 12 * len(s["modes"])


def run(rig, s):
    lib = common.make_library(rig, **s["library"])
    limit = common.memory_limit(lib, s["memory_ratio"])
    base = {"server": s["server"], "tunables": s["tunables"], "drive": s["drive"],
            "memory_limit": limit}
    rows, outcomes = [], {}
    for mode in s["modes"]:
        if not rig.wants(mode):
            continue
        extra = {"mode": mode}
        if mode != "vanilla" and s.get("policy"):
            extra["policy"] = s["policy"]
        elif mode != "vanilla":
            extra["prefetch"] = s["prefetch"]
        one = rig.max_rate({**base, **extra, "library": lib}, f"{mode}-1disk", s["search"],
                           {"config": mode, "disks": 1})
        r1 = one.get("answer")
        two_cfg = {**base, **extra, "library": lib,
                   "mounts": [{"name": "d1", "library": lib}, {"name": "d2", "library": lib}],
                   "loads": [{"path": "d1/", "library": lib, "share": 0.5},
                             {"path": "d2/", "library": lib, "share": 0.5}]}
        two = rig.max_rate(two_cfg, f"{mode}-2disks",
                           dict(s["search"], start=(r1 or s["search"]["start"]) * 1.8),
                           {"config": mode, "disks": 2})
        rows += [common.row(f"{mode} 1 disk", one, r1), common.row(f"{mode} 2 disks", two, r1)]
        outcomes[f"{mode} 1 disk"] = one
        outcomes[f"{mode} 2 disks"] = two
    common.print_table(rows, rig.log_plain)
    common.plot_rates(os.path.join(rig.out, "twodisks-rates.png"), rows,
                      "one vs two emulated disks (ratio to the same mode's one disk)")
    return 0
