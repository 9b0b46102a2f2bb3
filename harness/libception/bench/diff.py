"""Two competing diff -r runs (paper Fig. 18): completion time of one and of two concurrent runs, with and without libception.

Four copies of a real source tree (default: this machine's CPython
standard library, /usr/lib/python3.11) go onto one emulated WD Red as a
directory library: A1, B1 (A1 with every 50th file changed), A2, B2 (the
same pair again), so the two concurrent runs share no cached data.  Each
measurement mounts afresh (cold cache) and runs inside a memory cgroup;
under libception, receptiond runs in the same cgroup.  The modes run in
rounds of balanced order; the time ratio has a 95% interval over rounds.
Every run's output is compared with `diff -r` of the same trees on the
real file system (transparency).
"""
import math
import os
import shutil
import subprocess
import time

from .. import cgroup, daemon, hddsim, plots, servers
from . import cpumeter, stats

MIB = 2**20


def settings(quick):
    return {"source": "/usr/lib/python3.11", "subdir": "email" if quick else None,
            "change_every": 50, "drive": "wd-red", "memory_limit": 64 * MIB,
            "prefetch": "2M",
            # rounds of both modes in balanced order (A B, B A, ...); even, so
            # every two cancel a linear drift
            "repeats": 2 if quick else 4, "reruns": 2, "other_cpu_max": 0.5,
            "target_cut": 0.5, "resamples": stats.RESAMPLES}


def steps(s):
    return 4 * (s["repeats"] + s["reruns"])


def _ignore(d, names):
    """Caches and packages left out; symlinks too: hddsim serves none, so
    the trees on the real file system are the ones diff reads through it."""
    skip = shutil.ignore_patterns("__pycache__", "site-packages", "dist-packages")(d, names)
    return set(skip) | {n for n in names if os.path.islink(os.path.join(d, n))}


def _build_trees(rig, s):
    root = os.path.join(rig.out, "diff-src")
    stamp = os.path.join(root, ".complete")
    if os.path.exists(stamp):
        return root
    shutil.rmtree(root, ignore_errors=True)
    src = s["source"] if not s["subdir"] else os.path.join(s["source"], s["subdir"])
    for pair in ("1", "2"):
        a = os.path.join(root, f"A{pair}")
        b = os.path.join(root, f"B{pair}")
        shutil.copytree(src, a, symlinks=True, ignore=_ignore)
        shutil.copytree(src, b, symlinks=True, ignore=_ignore)
        n = 0
        for d, dirs, files in sorted(os.walk(b)):
            dirs.sort()
            for f in sorted(files):
                n += 1
                p = os.path.join(d, f)
                if n % s["change_every"] == 0 and os.path.isfile(p) and not os.path.islink(p):
                    with open(p, "ab") as fh:
                        fh.write(b"\n# changed for the libception diff benchmark\n")
    open(stamp, "w").close()
    return root


def _measure(rig, s, root, mode, pairs, tag):
    """Mount, run `pairs` concurrent diff -r, return seconds and outputs."""
    base = os.path.join(rig.work, tag)
    os.makedirs(base, exist_ok=True)
    c = rig.cleanup
    m = hddsim.Mount(os.path.join(base, "mnt"), s["drive"], root, meta_group=0)
    hm = c.push(f"unmount {m.path}", m.unmount)
    g = cgroup.MemoryGroup(f"bench-{os.getpid()}-{tag}", s["memory_limit"]).create()
    hg = c.push(f"remove cgroup {g.path}", g.destroy)
    env = dict(os.environ)
    hd = None
    try:
        if mode == "libception":
            sock = rig.socket_path(tag)
            proc = daemon.start(sock, detached=False, in_cgroup=g.add,
                                log=os.path.join(base, "receptiond.log"),
                                args=["--prefetch", s["prefetch"]])
            hd = c.push("stop receptiond", proc.terminate)
            env.update(servers.libception_env(rig.lib_so, sock, "prefetch+serialize",
                                              s["prefetch"]))
        t0 = time.monotonic()
        procs = [subprocess.Popen(["diff", "-r", os.path.join(m.path, f"A{p}"),
                                   os.path.join(m.path, f"B{p}")], stdout=subprocess.PIPE,
                                  env=env, preexec_fn=g.preexec) for p in pairs]
        outs, times = [], []
        for p in procs:
            out, _ = p.communicate()
            times.append(time.monotonic() - t0)
            if p.returncode not in (0, 1):
                raise RuntimeError(f"diff exited with status {p.returncode}")
            outs.append(out.decode(errors="replace").replace(m.path, "MNT"))
        disk = m.stats()
    finally:
        for h in (hd, hg, hm):
            if h is not None:
                c.run_now(h)
    return {"seconds": max(times), "each_s": times, "outputs": outs,
            "disk_mb": disk.get("bytes", 0) / 1e6, "disk_reads": disk.get("reads")}


def _reference(root, pairs=("1", "2")):
    """What `diff -r` prints for each pair read straight from the real
    file system: the output every run through hddsim must give."""
    out = {}
    for p in pairs:
        r = subprocess.run(["diff", "-r", os.path.join(root, f"A{p}"), os.path.join(root, f"B{p}")],
                           stdout=subprocess.PIPE, check=False)
        if r.returncode not in (0, 1):
            raise RuntimeError(f"diff of the source trees exited with status {r.returncode}")
        out[p] = r.stdout.decode(errors="replace").replace(root, "MNT")
    return out


def _one(rig, s, root, reference, mode, pairs, rnd):
    """One measurement, recorded (or taken from the results on --resume)."""
    point = {"mode": mode, "runs": len(pairs), "repeat": rnd}
    rec = rig.results.get(point)
    key = f"{mode} x{len(pairs)}"
    if rec is not None:
        rig.progress.skip(key)
        return rec
    rig.progress.begin(f"diff: {key} (round {rnd + 1})")
    with cpumeter.CpuMeter(interval=0.5) as meter:
        r = _measure(rig, s, root, mode, pairs, f"{mode}-{len(pairs)}-{rnd}")
    rig.progress.end()
    other = meter.verdict(s.get("other_cpu_max", 0.5))
    same = all(out == reference[p] for p, out in zip(pairs, r.pop("outputs")))
    rig.results.add(point, **r, identical=same, other_cpu=other)
    rec = rig.results.get(point)
    rig.log(f"diff: {key}: {rec['seconds']:.1f} s, disk {rec['disk_mb']:.0f} MB, "
            f"other load {other['cores']:.2f} cores" + (" DISTURBED" if other["disturbed"] else ""))
    return rec


def run(rig, s):
    """Rounds of vanilla and libception in balanced order (A B, B A, ...);
    a round with a measurement disturbed by other load is run again, at
    most `reruns` times in all, and left out of the interval."""
    root = _build_trees(rig, s)
    reference = _reference(root)
    modes = ["vanilla", "libception"]
    rounds, rnd, reruns = [], 0, 0
    while sum(1 for r in rounds if not r["disturbed"]) < s["repeats"]:
        counted = sum(1 for r in rounds if not r["disturbed"])
        order = [modes[i] for i in stats.balanced_order(2, counted)]
        secs, disturbed = {}, False
        for mode in order:
            for pairs in (("1",), ("1", "2")):
                rec = _one(rig, s, root, reference, mode, pairs, rnd)
                secs[(mode, len(pairs))] = rec["seconds"]
                disturbed |= bool((rec.get("other_cpu") or {}).get("disturbed"))
                if rec.get("identical") is False:
                    rig.log(f"diff: {mode} x{len(pairs)}: OUTPUT DIFFERS from diff on the "
                            "real file system (transparency broken)")
        if disturbed and reruns < s["reruns"]:
            reruns += 1
        else:
            disturbed = False
        rounds.append({"round": rnd + 1, "order": order, "seconds": secs, "disturbed": disturbed})
        rnd += 1
    summary = summarize(rounds, s)
    rig.results.add({"part": "summary"}, **summary)
    for line in report(summary):
        rig.log_plain(f"libception bench: {line}")
    med = {f"{m} x{n}": summary["median_s"][f"{m} x{n}"] for m in modes for n in (1, 2)}
    plots.bars(os.path.join(rig.out, "diff-times.png"), list(med), list(med.values()),
               "completion time (s)", "diff -r on an emulated WD Red (paper Fig. 18)")
    return 0


def summarize(rounds, s):
    """Per concurrency: each counted round's libception / vanilla time, their
    geometric mean with a 95% interval (bootstrap over rounds), and the
    target (at least `target_cut` shorter with two runs) met only when the
    interval's end clears it."""
    used = [r for r in rounds if not r["disturbed"]]
    out = {"rounds": [{**r, "seconds": {f"{m} x{n}": v for (m, n), v in r["seconds"].items()}}
                      for r in rounds],
           "rounds_used": len(used), "median_s": {}, "cuts": []}
    for m in ("vanilla", "libception"):
        for n in (1, 2):
            xs = sorted(r["seconds"][(m, n)] for r in used)
            out["median_s"][f"{m} x{n}"] = xs[len(xs) // 2]
    for n in (1, 2):
        logs = [[math.log(r["seconds"][("libception", n)] / r["seconds"][("vanilla", n)])]
                for r in used]
        iv = stats.mean_interval(logs, resamples=s.get("resamples", stats.RESAMPLES))
        cut = {"runs": n, "ratio": math.exp(iv["mean"]), "low": math.exp(iv["low"]),
               "high": math.exp(iv["high"]), "per_round": [math.exp(x[0]) for x in logs]}
        if n == 2:
            cut["target_cut"] = s["target_cut"]
            cut["met"] = 1 - cut["high"] >= s["target_cut"]
        out["cuts"].append(cut)
    return out


def report(summary):
    lines = []
    for r in summary["rounds"]:
        secs = ", ".join(f"{k} {v:.1f} s" for k, v in r["seconds"].items())
        lines.append(f"round {r['round']} ({' '.join(r['order'])}): {secs}"
                     + ("  DISTURBED: run again, not in the interval" if r["disturbed"] else ""))
    for c in summary["cuts"]:
        line = (f"{c['runs']} concurrent: libception takes {c['ratio']:.2f}x vanilla's time "
                f"(95% interval {c['low']:.2f}-{c['high']:.2f}, {summary['rounds_used']} rounds; "
                f"per round {' '.join(f'{x:.2f}' for x in c['per_round'])}): "
                f"{(1 - c['ratio']) * 100:.0f}% shorter")
        if "met" in c:
            line += (f"; target >= {c['target_cut'] * 100:.0f}% shorter "
                     + ("met" if c["met"] else "NOT met")
                     + f" (at worst {(1 - c['high']) * 100:.0f}%)")
        lines.append(line)
    return lines
