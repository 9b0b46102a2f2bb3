"""Do no harm on fast storage: nginx serving a library from the machine's real disk, with and without libception.

The library is materialized (vidload --materialize) into a real
directory on the file system holding the output directory; the memory
limit is the library's size / 32 as elsewhere, so most requests still go
to the (fast, non-emulated) device.  Target: libception >= 0.97x vanilla.
"""
import os

from .. import vidload
from . import common


def settings(quick):
    tunables, source = common.best_tunables("nginx")
    return {"library": {"preset": "sd", "count": 40 if quick else 300, "seed": 1},
            "memory_ratio": common.MEMORY_RATIO, "server": "nginx",
            "tunables": tunables, "tunables_source": source, "prefetch": "2M",
            "search": common.search_settings(quick, start=4 if quick else 12)}


def steps(s):
    return 14


def run(rig, s):
    lib = common.make_library(rig, **s["library"])
    root = os.path.join(rig.out, "fastdisk-library")
    stamp = os.path.join(root, ".complete")
    if not os.path.exists(stamp):
        rig.log(f"materializing {os.path.basename(lib)} into {root} "
                f"({common.rigmod.library_bytes(lib) / 1e9:.1f} GB)")
        vidload.materialize(lib, root)
        open(stamp, "w").close()
    os.chmod(rig.out, 0o755)
    for d, dirs, files in os.walk(root):
        os.chmod(d, 0o755)
    base = {"server": s["server"], "tunables": s["tunables"], "library": lib, "docroot": root,
            "memory_limit": common.memory_limit(lib, s["memory_ratio"])}
    van = rig.max_rate({**base, "mode": "vanilla"}, "vanilla", s["search"], {"config": "vanilla"})
    v = van.get("answer")
    lc = rig.max_rate({**base, "mode": "libception", "prefetch": s["prefetch"]}, "libception",
                      dict(s["search"], start=v or s["search"]["start"]), {"config": "libception"})
    rows = [common.row("nginx vanilla (real disk)", van, v),
            common.row("nginx libception (real disk)", lc, v)]
    common.print_table(rows, rig.log_plain)
    common.plot_rates(os.path.join(rig.out, "fastdisk-rates.png"), rows,
                      "fast storage: no harm (target >= 0.97x)")
    return 0
