"""Do no harm on fast storage: nginx serving a library from the machine's real disk, with and without libception.

The library is materialized (vidload --materialize) into a real
directory on the file system holding the output directory; the memory
limit is the library's size / 32 as elsewhere, so most requests still go
to the (fast, non-emulated) device.  Target: libception >= 0.97x vanilla.

Rows: vanilla; libception with its defaults (fixed 2 MiB, one read at a
time); libception with the device's profile (issue 6): the real disk
under the library is profiled once (receptiond-profile, O_DIRECT reads,
so the data is cold whatever the page cache holds) and the daemon runs
`competitive:profile=PATH`.  Where the profile finds no mechanical
switch cost and parallel reads faster, as on this VM's disk, that device
is direct: the daemon answers at once and the library reads on its own
(docs/prefetch-sizing.md).  The last row keeps the daemon in the path
with the same profile (`direct=0`: the profile's size, never below the
policy's 128 KiB floor, and its number of reads at once), to show what
leaving it out is worth.
"""
import os

from .. import vidload
from . import common

MIB = 1 << 20


def settings(quick):
    tunables, source = common.best_tunables("nginx")
    return {"library": {"preset": "sd", "count": 40 if quick else 300, "seed": 1},
            "memory_ratio": common.MEMORY_RATIO, "server": "nginx",
            "tunables": tunables, "tunables_source": source, "prefetch": "2M",
            "profile_budget": 15 if quick else 60,
            # Opt-in (--set serial_row=true): the profile's size with one read
            # at a time, to tell the concurrency's part from the size's.
            "serial_row": False,
            # With a direct profile: the same profile with the daemon in the path.
            "daemon_row": True,
            "search": common.search_settings(quick, start=4 if quick else 12)}


def steps(s):
    return 29   # a profile and four searches of about 7 probes


def measure_profile(rig, s, root):
    """Profile the real disk under the materialized library once; the
    JSON is kept in the output directory (and reused with --resume).
    receptiond-profile reads with O_DIRECT on ext4, so the library just
    written (and possibly still cached) is read from the device."""
    point = {"part": "profile", "budget": s["profile_budget"]}
    path = os.path.join(rig.out, "profile-realdisk.json")
    done = rig.results.get(point)
    if done is not None and os.path.exists(path):
        rig.progress.skip(f"profile of the real disk ({path})")
        return path, done["profile"]
    # The library was just written: flush it first, or the O_DIRECT reads
    # wait for its writeback and the profile measures that.
    for d, dirs, files in os.walk(root):
        for name in files:
            fd = os.open(os.path.join(d, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
    prof = common.profile_device(rig, point, path, root, s["profile_budget"])
    return path, prof


def _policy_at_answer(outcome):
    """The daemon's policy description (size, concurrency) at the answer."""
    at = outcome.get("at_answer") or (outcome.get("probes") or [{}])[-1]
    devices = (at.get("daemon_stats") or {}).get("devices") or []
    busiest = max(devices, key=lambda d: d.get("bytes_read", 0), default={})
    return busiest.get("policy") or {}


def _size(nbytes):
    return f"{nbytes / MIB:.2f}M" if nbytes >= MIB else f"{nbytes / 1024:.0f}K"


def _daemon_row(outcome, pol, prof, v):
    """A profile row with the daemon in the path, named by its size and
    reads at once: (table row, plot label)."""
    size, n = pol.get("size"), pol.get("concurrency", prof["concurrency"])
    what = _size(size) if size else "?"
    return (common.row(f"nginx libception, device profile through the daemon (competitive "
                       f"{what}, {n} read{'s' if n != 1 else ''} at once)", outcome, v),
            f"libception, profile\n{what}, {n} at once")


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
    prof_path, prof = measure_profile(rig, s, root)
    prof_line = (f"libception bench: profile of the real disk: competitive size "
                 f"{prof['competitive_size'] / MIB:.3f} MiB = switch {prof['switch_s'] * 1e3:.3f} ms "
                 f"x {prof['rate'] / 1e6:.0f} MB/s; concurrent/serial by threads "
                 + ", ".join(f"{r['threads']}: {r['ratio']:.2f}"
                             for r in prof["parallel"]["results"])
                 + f"; concurrency {prof['concurrency']} ({prof['concurrency_reason']})")
    rig.log_plain(prof_line)
    base = {"server": s["server"], "tunables": s["tunables"], "library": lib, "docroot": root,
            "memory_limit": common.memory_limit(lib, s["memory_ratio"])}
    # vanilla always runs (the ratios' base); --only picks the other rows.
    van = rig.max_rate({**base, "mode": "vanilla"}, "vanilla", s["search"], {"config": "vanilla"})
    v = van.get("answer")
    search = dict(s["search"], start=v or s["search"]["start"])
    rows = [common.row("nginx vanilla (real disk)", van, v)]
    short = ["vanilla"]   # the plot's bar labels
    if rig.wants("libception"):
        lc = rig.max_rate({**base, "mode": "libception", "prefetch": s["prefetch"]}, "libception",
                          search, {"config": "libception"})
        rows.append(common.row("nginx libception (real disk)", lc, v))
        short.append(f"libception\nfixed {s['prefetch']}")
    # Same server settings and search; the daemon's size and reads at once
    # come from the profile (the library's LIBCEPTION_PREFETCH is ignored
    # by the sizing policies).
    policy = f"competitive:profile={prof_path}"
    figures = {"profile_switch_s": prof["switch_s"], "profile_rate": prof["rate"],
               "profile_concurrency": prof["concurrency"]}
    size, direct = None, False
    if rig.wants("libception-profile"):
        pr = rig.max_rate({**base, "mode": "libception", "policy": policy}, "libception-profile",
                          search, {"config": "libception-profile", **figures})
        pol = _policy_at_answer(pr)
        direct = bool(pol.get("direct"))
        if direct:
            rows.append(common.row("nginx libception, device profile (direct: the library "
                                   "reads on its own)", pr, v))
            short.append("libception, profile\ndirect")
        else:
            size = pol.get("size")
            row, label = _daemon_row(pr, pol, prof, v)
            rows.append(row)
            short.append(label)
    if direct and s.get("daemon_row") and rig.wants("libception-profile-daemon"):
        pd = rig.max_rate({**base, "mode": "libception", "policy": policy + ",direct=0"},
                          "libception-profile-daemon", search,
                          {"config": "libception-profile-daemon", **figures})
        pol = _policy_at_answer(pd)
        size = pol.get("size")
        row, label = _daemon_row(pd, pol, prof, v)
        rows.append(row)
        short.append(label)
    if s.get("serial_row") and prof["concurrency"] > 1 and rig.wants("libception-profile-serial"):
        ps = rig.max_rate({**base, "mode": "libception", "policy": policy + ",concurrency=1"},
                          "libception-profile-serial", search,
                          {"config": "libception-profile-serial", **figures})
        rows.append(common.row("nginx libception, device profile, 1 read at a time", ps, v))
        short.append(f"libception, profile\n{_size(size) if size else '?'}, 1 at a time")
    common.print_table(rows, rig.log_plain)
    if size is not None and size > prof["competitive_size"] + 4096:
        rig.log_plain(f"libception bench: the daemon used {_size(size)} windows: the profile's "
                      f"{_size(prof['competitive_size'])} is below the competitive policy's floor "
                      f"(min=, docs/prefetch-sizing.md)")
    common.plot_rates(os.path.join(rig.out, "fastdisk-rates.png"),
                      [dict(r, label=label) for r, label in zip(rows, short)],
                      "fast storage: no harm (target >= 0.97x)")
    return 0
