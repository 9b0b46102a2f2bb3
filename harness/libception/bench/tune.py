"""Tune: one procedure (bench/tuning.py) for vanilla, kernel tuning and libception, the same grid and budget; records the best of each.

Per server (names for --only: the server's): vanilla's server knobs from
the shipped settings; then kernel tuning (read_ahead_kb, and on the block
disk the scheduler and max_sectors_kb) and libception (window, parallel
reads), each its own knobs first and then the server's, from vanilla's
winning server settings.  Candidates are challenged at the best answer so
far on the first seed and searched only when they beat it (tune_config).
The winners go to DIR/tuned.json, which `bench compare --set tuned=PATH`
reads; compare measures them on every seed, in rounds.  Kind "watch" (receptiond
--watch, no library; block disk only) runs when `kinds` names it.
"""
import datetime
import json
import os

from .. import blockdisk, servers
from . import common, stats, tuning

TUNED_FILE = "tuned.json"


def settings(quick):
    return {"library": {"preset": "sd", "count": 60 if quick else common.FULL_VIDEOS, "seed": 1},
            "memory_ratio": common.MEMORY_RATIO, "drive": "wd-red",
            "servers": ["nginx", "apache", "lighttpd"], "kinds": list(tuning.KINDS),
            "budget": 3 if quick else tuning.BUDGET,
            "search": {**common.search_settings(quick, start=2 if quick else 6),
                       "seeds": 1}}


def steps(s):
    # a challenge per candidate, a few first-seed searches
    probes = s["budget"] + 12
    return len(s["servers"]) * len(s["kinds"]) * probes


def base_config(rig, s):
    lib = common.make_library(rig, **s["library"])
    return {"library": lib, "drive": s["drive"], "disk": s["disk"],
            "memory_limit": common.memory_limit(lib, s["memory_ratio"])}


def tune_config(rig, make_cfg, dims, start, budget, search, point, tag, known=None):
    """tuning.tune() over candidates challenged before they are searched.

    The start point gets a max-rate search on the first seed, unless
    `known` ({"point", "answer", "failed_above", "why"}) holds that search
    already made for the same configuration (the kernel kind's start is
    vanilla's winner: same_as_vanilla).  Every later
    candidate is first probed once, first seed, at the lowest rate the
    best so far failed (or best x (1 + rel_resolution)): one that fails
    there cannot be told better than the best at the search's resolution,
    and scores just below it, lower the more sessions it failed; one that
    passes gets a first-seed search upward from there (steps of 1 + 2 x
    rel_resolution) and scores its answer.  The winner's first-seed
    answer is the result (out["score"]; out["failed_above"], the rate
    it failed at).  Why: an every-seed search per candidate is about 18
    probes of 7 minutes at the full probe, 12 candidates a day and a half
    per kind; a challenge is one probe, and no claim rests on a tuning's
    answers (`bench compare` measures the winners on every seed, in
    rounds).  Each record sits under `point` plus the candidate (so
    --resume skips it).  A configuration the server refuses scores
    None."""
    rel = float(search.get("rel_resolution", 0.1))
    first = dict(search, seeds=1, all_seeds=False)   # one seed: a screen
    state = {"best": None, "above": None, "n": 0}

    def evaluate(p):
        state["n"] += 1
        name = f"{tag}-{state['n']}"
        if known and p == known["point"]:
            rig.log(f"{name}: {p}: {known['answer']:g} sessions/s (first seed), "
                    f"not measured again: {known['why']}")
            state["best"], state["above"] = known["answer"], known.get("failed_above")
            return known["answer"]
        cfg = make_cfg(p)
        try:
            servers.make_server(cfg.get("server", "nginx"), os.path.join(rig.work, name, "check"),
                                rig.work, rig.port, cfg.get("tunables")).check()
        except servers.ServerError as e:
            rig.log(f"{name}: {p}: not run: {e}")
            return None
        where = {**point, "candidate": p}
        settings = dict(first, start=search["start"])
        if state["best"]:
            # where the best failed: passing there is beating it
            rate = state["above"] or round(state["best"] * (1 + rel), 3)
            probe = rig.probe_at(cfg, f"{name}-challenge", {**where, "challenge": rate}, first,
                                 rate, f"{name}: challenging {state['best']:g}/s")["probe"]
            if stats.wrong_bytes(probe):
                rig.log(f"{name}: {p}: integrity errors at {rate:g}/s")
                return None
            if not probe["pass"]:
                score = state["best"] * (1 - rel * min(stats.failed_share(probe), 100) / 100)
                rig.log(f"{name}: {p}: failed {stats.failed_share_text(probe)} at {rate:g}/s: "
                        f"not better than {state['best']:g}/s")
                return score
            rig.log(f"{name}: {p}: passed at {rate:g}/s (failed "
                    f"{stats.failed_share_text(probe)}): beats {state['best']:g}/s, searching up")
            settings = dict(first, start=rate, passed=rate, growth=1 + 2 * rel)
        o = rig.max_rate(cfg, name, settings, where)
        answer = o.get("answer") or 0
        rig.log(f"{name}: {p}: {answer:g} sessions/s (first seed)")
        if answer and answer > (state["best"] or 0):
            state["best"], state["above"] = answer, o.get("failed_above")
        return answer

    out = tuning.tune(evaluate, dims, start, budget)
    out["failed_above"] = state["above"] if out["score"] is not None else None
    return out


def same_as_vanilla(s, kind, start):
    """Whether `kind`'s start point is vanilla's winner itself: the
    kernel kind on the block disk starts from the queue vanilla runs (the
    SATA queue, unless the run's --set changed a knob of it) with
    vanilla's winning server settings, so measuring it again would spend
    a search on a configuration already searched."""
    if kind != "kernel" or s.get("disk") != "block":
        return False
    queue = {**blockdisk.SATA_QUEUE,
             **{k: s[k] for k in blockdisk.SATA_QUEUE if s.get(k) is not None}}
    return all(start[k] == v for k, v in queue.items() if k in start)


def tune_kind(rig, base, server, kind, s, vanilla=None):
    """One kind on one server: its grid, its start, the common budget.
    vanilla: vanilla's tune_config outcome (the others start from its
    winner)."""
    dims = tuning.grid(server, kind, s["disk"])
    start = tuning.start_point(server, kind, vanilla and vanilla["best"], s["disk"])
    known = None
    if vanilla and vanilla["score"] and same_as_vanilla(s, kind, start):
        known = {"point": start, "answer": vanilla["score"],
                 "failed_above": vanilla["failed_above"],
                 "why": "vanilla's winner on the same queue"}
    return tune_config(rig, lambda p: tuning.configure(base, server, kind, p), dims, start,
                       s["budget"], s["search"], {"part": "tune", "server": server, "kind": kind},
                       f"{server}-{kind}", known)


def run(rig, s):
    base = base_config(rig, s)
    best = {}
    for server in s["servers"]:
        if not rig.wants(server):
            rig.progress.drop(steps(dict(s, servers=[server])))
            continue
        best[server] = {}
        vanilla = None
        # vanilla always: the others start from its winner
        kinds = tuning.KINDS + (tuning.WATCH,)
        for kind in [k for k in kinds if k == "vanilla" or k in s["kinds"]]:
            out = tune_kind(rig, base, server, kind, s, vanilla)
            if kind == "vanilla":
                vanilla = out
            best[server][kind] = {
                "point": out["best"], "answer": out["score"],
                "candidates": len(out["tried"]),
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
