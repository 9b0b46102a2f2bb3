"""Tune: one procedure (bench/tuning.py) for vanilla, kernel tuning and libception, the same grid and budget; records the best of each.

Per server (names for --only: the server's): vanilla's server knobs from
the shipped settings; then kernel tuning (read_ahead_kb, and on the block
disk the scheduler and max_sectors_kb) and libception (window, parallel
reads), each its own knobs first and then the server's, from vanilla's
winning server settings.  Each candidate is a full max-rate search
(every seed at every rate); its answer is the candidate's score.  The
winners go to DIR/tuned.json, which `bench compare --set tuned=PATH`
reads.
"""
import datetime
import json
import os

from .. import servers
from . import common, tuning

TUNED_FILE = "tuned.json"


def settings(quick):
    seeds = 1 if quick else 3
    return {"library": {"preset": "sd", "count": 60 if quick else common.FULL_VIDEOS, "seed": 1},
            "memory_ratio": common.MEMORY_RATIO, "drive": "wd-red", "disk": "fuse",
            "servers": ["nginx", "apache", "lighttpd"], "kinds": list(tuning.KINDS),
            "budget": 3 if quick else tuning.BUDGET,
            "search": {**common.search_settings(quick, start=2 if quick else 6),
                       "seeds": seeds, "all_seeds": True}}


def steps(s):
    probes = 6 * s["search"]["seeds"]
    return len(s["servers"]) * len(s["kinds"]) * s["budget"] * probes


def base_config(rig, s):
    lib = common.make_library(rig, **s["library"])
    return {"library": lib, "drive": s["drive"], "disk": s["disk"],
            "memory_limit": common.memory_limit(lib, s["memory_ratio"])}


def tune_config(rig, make_cfg, dims, start, budget, search, point, tag):
    """tuning.tune() with a max-rate search per candidate: make_cfg(p) is
    the candidate's configuration; each search is recorded under `point`
    plus the candidate (so --resume skips it) and starts at the best
    answer so far.  A configuration the server refuses scores None."""
    state = {"best": None, "n": 0}

    def evaluate(p):
        cfg = make_cfg(p)
        state["n"] += 1
        name = f"{tag}-{state['n']}"
        try:
            servers.make_server(cfg.get("server", "nginx"), os.path.join(rig.work, name, "check"),
                                rig.work, rig.port, cfg.get("tunables")).check()
        except servers.ServerError as e:
            rig.log(f"{name}: {p}: not run: {e}")
            return None
        o = rig.max_rate(cfg, name, dict(search, start=state["best"] or search["start"]),
                         {**point, "candidate": p})
        answer = o.get("answer") or 0
        rig.log(f"{name}: {p}: {answer:g} sessions/s")
        if answer and answer > (state["best"] or 0):
            state["best"] = answer
        return answer

    return tuning.tune(evaluate, dims, start, budget)


def tune_kind(rig, base, server, kind, s, vanilla_best=None):
    """One kind on one server: its grid, its start, the common budget."""
    dims = tuning.grid(server, kind, s["disk"])
    start = tuning.start_point(server, kind, vanilla_best, s["disk"])
    return tune_config(rig, lambda p: tuning.configure(base, server, kind, p), dims, start,
                       s["budget"], s["search"], {"part": "tune", "server": server, "kind": kind},
                       f"{server}-{kind}")


def run(rig, s):
    base = base_config(rig, s)
    best = {}
    for server in s["servers"]:
        if not rig.wants(server):
            rig.progress.drop(len(s["kinds"]) * s["budget"] * 6 * s["search"]["seeds"])
            continue
        best[server] = {}
        vanilla_best = None
        # vanilla always: the others start from its winner
        for kind in [k for k in tuning.KINDS if k == "vanilla" or k in s["kinds"]]:
            out = tune_kind(rig, base, server, kind, s, vanilla_best)
            if kind == "vanilla":
                vanilla_best = out["best"]
            best[server][kind] = {
                "point": out["best"], "answer": out["score"], "candidates": len(out["tried"]),
                "budget_spent": out["spent"],
                "source": f"libception bench tune, {datetime.date.today().isoformat()}, "
                          f"budget {s['budget']}, disk {s['disk']}"}
    with open(os.path.join(rig.out, TUNED_FILE), "w", encoding="utf-8") as f:
        json.dump(best, f, indent=1)
    for server, kinds in best.items():
        for kind, b in kinds.items():
            answer = "-" if b["answer"] is None else f"{b['answer']:g}"
            rig.log_plain(f"libception bench: tune {server} {kind:<10} {answer:>8} sessions/s "
                          f"after {b['candidates']} candidates"
                          f"{' (budget spent)' if b['budget_spent'] else ''}: "
                          + ", ".join(f"{k}={v}" for k, v in b["point"].items()))
    return 0
