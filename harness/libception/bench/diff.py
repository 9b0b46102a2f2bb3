"""Two competing diff -r runs (paper Fig. 18): completion time of one and of two concurrent runs, with and without libception.

Four copies of a real source tree (default: this machine's CPython
standard library, /usr/lib/python3.11) go onto one emulated WD Red as a
directory library: A1, B1 (A1 with every 50th file changed), A2, B2 (the
same pair again), so the two concurrent runs share no cached data.  Each
measurement mounts afresh (cold cache) and runs inside a memory cgroup;
under libception, receptiond runs in the same cgroup.  Output of every
run is compared with the vanilla run's (transparency).
"""
import os
import shutil
import subprocess
import time

from .. import cgroup, daemon, hddsim, plots, servers

MIB = 2**20


def settings(quick):
    return {"source": "/usr/lib/python3.11", "subdir": "email" if quick else None,
            "change_every": 50, "drive": "wd-red", "memory_limit": 64 * MIB,
            "prefetch": "2M", "repeats": 1 if quick else 3}


def steps(s):
    return 4 * s["repeats"]


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
        ignore = shutil.ignore_patterns("__pycache__", "site-packages", "dist-packages")
        shutil.copytree(src, a, symlinks=True, ignore=ignore)
        shutil.copytree(src, b, symlinks=True, ignore=ignore)
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


def run(rig, s):
    root = _build_trees(rig, s)
    results = {}
    reference = {}
    for rep in range(s["repeats"]):
        for mode in ("vanilla", "libception"):
            for pairs in (("1",), ("1", "2")):
                key = f"{mode} x{len(pairs)}"
                point = {"mode": mode, "runs": len(pairs), "repeat": rep}
                rec = rig.results.get(point)
                if rec is None:
                    rig.progress.begin(f"diff: {key} (repeat {rep + 1})")
                    r = _measure(rig, s, root, mode, pairs, f"{mode}-{len(pairs)}-{rep}")
                    rig.progress.end()
                    same = None
                    for pair, out in zip(pairs, r.pop("outputs")):
                        if mode == "vanilla":
                            reference[pair] = out
                        elif pair in reference:
                            same = (same is not False) and out == reference[pair]
                    rig.results.add(point, **r, identical_to_vanilla=same)
                    rec = rig.results.get(point)
                    rig.log(f"diff: {key}: {rec['seconds']:.1f} s, disk {rec['disk_mb']:.0f} MB")
                else:
                    rig.progress.skip(key)
                results.setdefault(key, []).append(rec["seconds"])
                if rec.get("identical_to_vanilla") is False:
                    rig.log(f"diff: {key}: OUTPUT DIFFERS from vanilla (transparency broken)")
    med = {k: sorted(v)[len(v) // 2] for k, v in results.items()}
    rig.log_plain(f"libception bench: {'diff -r runs':<22} {'vanilla s':>10} {'libception s':>13} "
                  f"{'shorter by':>10}")
    for n in (1, 2):
        v, lc = med.get(f"vanilla x{n}"), med.get(f"libception x{n}")
        cut = f"{(1 - lc / v) * 100:.0f}%" if v and lc else "-"
        rig.log_plain(f"libception bench: {f'{n} concurrent':<22} {v or 0:>10.1f} {lc or 0:>13.1f} "
                      f"{cut:>10}")
    plots.bars(os.path.join(rig.out, "diff-times.png"), list(med), list(med.values()),
               "completion time (s)", "diff -r on an emulated WD Red (paper Fig. 18)")
    return 0
