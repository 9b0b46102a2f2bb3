"""Pieces the scenarios share: the scaled-down library and memory limit,
the recorded best vanilla configurations, and the side-by-side table."""
import json
import os
import subprocess

from .. import cmd_mklib, daemon, plots
from . import rig as rigmod

MIB = 2**20
# The paper's Linux server: 8 GB of RAM for a 260 GB library (20,000 SD
# videos).  The cgroup limit is the library's size / 32.  The full runs use
# the paper's own sizes (20,000 videos, 8.1 GiB) rather than a scaled-down
# pair: the emulated disk is not scaled, so neither is the number of
# concurrent streams (~1,500), and each stream needs room for a prefetch
# (2 MiB) between its refills.  With 2,000 videos and 828 MiB a stream had
# 0.5 MiB and libception's prefetches were evicted before use
# (docs/notes/2026-11-23-results.md, "Scaling the memory").
MEMORY_RATIO = 1 / 32
FULL_VIDEOS = 20000

BEST_FILE = os.path.join(os.path.dirname(__file__), "best.json")


def make_library(rig, preset="sd", count=2000, seed=1, chunk=0, name=None):
    """Write the library file into the output directory (deterministic:
    the same arguments give the same file) and return its path."""
    name = name or f"{preset}-{count}-seed{seed}-chunk{chunk}.lcvl"
    path = os.path.join(rig.out, name)
    videos = cmd_mklib.generate(preset, count, seed, chunk)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="ascii") as f:
        cmd_mklib.write(videos, f, f"{preset} count={count} seed={seed} chunk={chunk}")
    os.rename(tmp, path)
    return path


def memory_limit(library_path, ratio=MEMORY_RATIO, floor=64 * MIB):
    """The cgroup limit for a library: its size times `ratio` (at least
    `floor`, so the server and daemon themselves fit)."""
    return max(floor, int(rigmod.library_bytes(library_path) * ratio))


def best_tunables(server):
    """The vanilla configuration the `servers` scenario found best for
    `server` (docs/benchmark.md, "Fairness"), or the shipped defaults with
    a note saying so."""
    try:
        with open(BEST_FILE, encoding="utf-8") as f:
            best = json.load(f)
        entry = best[server]
        return entry["tunables"], f"best of the recorded search ({entry.get('source', '?')})"
    except (OSError, ValueError, KeyError):
        return {}, "Debian defaults (no recorded search yet: run `libception bench servers`)"


def row(label, outcome, base_rate=None):
    """A table row from a max_rate() outcome."""
    at = outcome.get("at_answer") or {}
    disk = at.get("disk_time") or {}
    rate = outcome.get("answer")
    ratio = (rate / base_rate) if rate and base_rate else None
    return {"label": label, "rate": rate, "mb_per_s": at.get("mb_per_s"),
            "disk_mb_per_s": disk.get("mb_per_s", at.get("disk_mb_per_s")),
            "busy_share": disk.get("busy_share"), "transfer_share": disk.get("transfer_share"),
            "failed_pct": at.get("failed_pct"), "failed_above": outcome.get("failed_above"),
            "steady": (at.get("steady") or {}).get("steady"), "ratio": ratio}


def _fmt(v, spec):
    return "-" if v is None else format(v, spec)


def _pct(v):
    return "-" if v is None else f"{v:.0%}"


def print_table(rows, out=print, prog="libception bench"):
    """The side-by-side table: sessions/s without failures, MB/s to
    clients, disk MB/s, the drive's busy share and the transfer share of
    its busy time, and failed % at that rate, ratio to the first row; a
    `*` marks an answer whose probe was not steady."""
    w = max([34] + [len(r["label"]) for r in rows])   # long labels keep the columns aligned
    head = (f"{'configuration':<{w}} {'sessions/s':>10} {'MB/s out':>9} {'disk MB/s':>9} "
            f"{'busy':>5} {'xfer':>5} {'failed %':>8} {'ratio':>6}")
    out(f"{prog}: {head}")
    for r in rows:
        rate = _fmt(r["rate"], ".3g")
        if r["rate"] is not None and r.get("failed_above") is None:
            rate = ">=" + rate   # never failed within the search's cap
        if r.get("steady") is False:
            rate += "*"
        out(f"{prog}: {r['label']:<{w}} {rate:>10} {_fmt(r['mb_per_s'], '.1f'):>9} "
            f"{_fmt(r['disk_mb_per_s'], '.1f'):>9} {_pct(r.get('busy_share')):>5} "
            f"{_pct(r.get('transfer_share')):>5} {_fmt(r['failed_pct'], '.2f'):>8} "
            f"{_fmt(r['ratio'], '.2f'):>6}")


def plot_rates(path, rows, title):
    return plots.bars(path, [r["label"] for r in rows], [r["rate"] for r in rows],
                      "max failure-free sessions/s", title,
                      annotate=[None if r["ratio"] is None else
                                f"{r['rate']:.3g} ({r['ratio']:.2f}x)" for r in rows])


def plot_throughput(path, rows, title):
    """MB/s to clients and from the disk at each row's failure-free rate."""
    return plots.grouped_bars(path, [r["label"] for r in rows],
                              {"MB/s to clients": [r["mb_per_s"] for r in rows],
                               "MB/s from disk": [r["disk_mb_per_s"] for r in rows]},
                              "MB/s at the max failure-free rate", title)


def plot_probes(path, outcomes, title, max_fail=0.3):
    series = {label: [(p["rate"], p["failed_pct"]) for p in o.get("probes", [])]
              for label, o in outcomes.items()}
    return plots.probes(path, series, title, threshold=max_fail)


# Full runs judge steady state: each probe starts from a past as long as
# the longest video (its sessions running, its reads in the page cache:
# bench/past.py), warms up 100 s and judges 200 s, every rate on three
# seeds (docs/benchmark.md, "Steady-state probes").  --quick checks the
# pipeline with short probes on one seed.
FULL_PROBE = {"warmup_s": 100, "duration": 200, "seeds": 3, "rel_resolution": 0.1,
              "past_s": "longest"}
QUICK_PROBE = {"warmup_s": 10, "duration": 20, "seeds": 1, "rel_resolution": 0.25,
               "past_s": "longest"}


def search_settings(quick, start, duration=None):
    """vidload and search settings shared by the video scenarios."""
    # cap and floor are absolute, so searches started elsewhere (libception
    # from vanilla's answer) have the same bounds.
    s = {**(QUICK_PROBE if quick else FULL_PROBE), "start": start,
         "cap": start * 16, "floor": start / 16, "max_fail": 0.3, "seed": 1,
         "judged_sessions": None, "max_probes": None, "other_cpu_max": 0.5}
    if duration:
        s["duration"] = duration
    return s


def profile_device(rig, point, path, target, budget):
    """Run receptiond-profile on the device under `target` for at most
    `budget` seconds; keep its JSON at `path` and in the results under
    `point`; return the profile."""
    tool = os.path.join(daemon.prefix(), "bin", "receptiond-profile")
    rig.progress.begin(f"profile: {tool} --budget {budget} {target}")
    r = subprocess.run([tool, "--budget", str(budget), target],
                       capture_output=True, text=True, check=False)
    rig.progress.end()
    if r.returncode:
        raise RuntimeError(f"receptiond-profile: {r.stderr.strip()}")
    prof = json.loads(r.stdout)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(prof, f, indent=1)
    rig.results.add(point, profile=prof)
    return prof
