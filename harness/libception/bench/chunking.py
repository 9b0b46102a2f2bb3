"""Chunked vs unchunked (chunking paper, Fig. 5 and Table 1): the same videos unchunked, in 2 MiB and in 0.5 MiB chunks.

hddsim places chunk files so that the same video data lies at the same
place on the platter in every layout; vidload asks for the same 10 s
segments in every layout, by Range within a chunk file when a chunk
holds several.  nginx vanilla and under libception, per layout.

Table 1 ("wc", parts "wc-LAYOUT"): one reader reads whole videos, chunk
files in order, videos in a random order, from a fresh mount of each
layout with `cat` (hddsim.read_videos, which `libception calibrate
--chunking` uses too), as the paper's `wc` runs did: what the disk gives a single
sequential reader per layout, with no server in the way.
"""
import os
import random

from .. import blockdisk, hddsim
from . import common
from .rig import library_videos

LAYOUTS = [("unchunked", 0), ("2 MiB chunks", 2097152), ("0.5 MiB chunks", 524288)]


def settings(quick):
    tunables, source = common.best_tunables("nginx")
    return {"library": {"preset": "sd", "count": 60 if quick else common.FULL_VIDEOS, "seed": 1},
            "memory_ratio": common.MEMORY_RATIO, "drive": "wd-red", "server": "nginx",
            "tunables": tunables, "tunables_source": source, "prefetch": "2M",
            "modes": ["vanilla", "libception"],
            # Table 1: videos per read run, and runs (seeds) per layout
            "wc_videos": 5 if quick else 100, "wc_repeats": 1 if quick else 3,
            "search": common.search_settings(quick, start=2 if quick else 6)}


def steps(s):
    return 5 * len(LAYOUTS) * len(s["modes"]) + len(LAYOUTS) * s["wc_repeats"]


def read_rate(rig, s, lib, layout, chunk, seed):
    """One Table 1 run: s["wc_videos"] videos chosen by `seed`, each read
    whole (chunk files in order), from a fresh mount; MB/s."""
    point = {"part": "wc", "chunk": chunk, "seed": seed}
    done = rig.results.get(point)
    if done is not None:
        rig.progress.skip(f"wc {layout} seed {seed}")
        return done
    picked = random.Random(seed).sample(library_videos(lib), s["wc_videos"])
    disk = rig.with_disk({})
    m = blockdisk.mount(os.path.join(rig.work, f"wc-{chunk}"), s["drive"], lib, disk)
    if disk.get("read_ahead_kb") is not None:
        m.read_ahead_kb = disk["read_ahead_kb"]
    handle = rig.cleanup.push(f"unmount {m.path}", m.unmount)
    try:
        rig.progress.begin(f"wc {layout}: {len(picked)} videos, seed {seed}")
        total, secs = hddsim.read_videos(m.path, picked)
        rig.progress.end()
    finally:
        rig.cleanup.run_now(handle)
    rig.results.add(point, videos=len(picked), bytes=total, seconds=secs,
                    mb_per_s=total / secs / 1e6, config=disk)
    rig.log(f"wc {layout} seed {seed}: {total / 1e6:.0f} MB in {secs:.1f} s, "
            f"{total / secs / 1e6:.1f} MB/s")
    return rig.results.get(point)


def run(rig, s):
    rows, wc = [], []
    base_rate = None
    for name, chunk in LAYOUTS:
        lib = common.make_library(rig, **{**s["library"], "chunk": chunk})
        if rig.wants(f"wc-{name}"):
            rates = [read_rate(rig, s, lib, name, chunk, seed)["mb_per_s"]
                     for seed in range(1, s["wc_repeats"] + 1)]
            wc.append((name, rates))
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
    if wc:
        rig.log_plain("libception bench: Table 1 (one reader, whole videos in random order): "
                      + "; ".join(f"{n}: {sum(r) / len(r):.1f} MB/s "
                                  f"({', '.join(f'{x:.1f}' for x in r)})" for n, r in wc))
    common.print_table(rows, rig.log_plain)
    common.plot_rates(os.path.join(rig.out, "chunking-rates.png"), rows,
                      "chunked vs unchunked layouts (chunking paper Fig. 5)")
    return 0
