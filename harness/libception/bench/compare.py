"""Compare: vanilla, kernel tuning and libception in balanced rounds (A B B A) at one commit; ratios with 95% intervals, targets met or not.

Each round measures every configuration's maximum failure-free rate once
(every seed at every probed rate), in the order stats.balanced_order
gives (A B, B A, ... for two; a rotating Williams order for three).  The
configurations are the best of `bench tune` (settings "tuned": its
tuned.json); without one, vanilla takes bench/best.json's tunables and
the others their start points, and the output says they are untuned.
Every round that ran is printed and recorded; a round with a recorded
disturbance (a probe marked with one, or probes of two machines) is
re-run once, both are printed, and only the re-run enters the intervals.
A round found unfinished on resuming on another machine starts again
there instead (restart_here); each restart takes one of the re-runs.
The ratios are the geometric means of the per-round ratios with a
two-stage bootstrap interval (bench/stats.py); a target is met only when
the lower end clears it.
"""
import json
import math

from .. import results
from . import common, disktime, stats, tuning
from .tune import base_config

TARGETS = [{"num": "libception", "den": "vanilla", "at_least": 2.0},
           {"num": "libception", "den": "kernel", "at_least": 1.1}]
PROBES = 6   # rates a search tries, about (steps() counts them; seeds on top)

# What the disk and the daemon's queue did at each configuration's answer:
# one value per probe at the round's answer rate (one per seed).
AT_ANSWER = {
    "transfer_share": lambda p: (p.get("disk_time") or {}).get("transfer_share"),
    "busy_share": lambda p: (p.get("disk_time") or {}).get("busy_share"),
    "queue_wait_p99_ms": lambda p: (p.get("queue_wait_ms") or {}).get("p99"),
    # about one positioning per window: what the transfer share follows from
    "position_ms_per_window": lambda p: (disktime.per_window(p) or {}).get("position_ms"),
    "disk_mb_per_window": lambda p: (disktime.per_window(p) or {}).get("disk_mb"),
}


def settings(quick):
    seeds = 2 if quick else 3
    return {"library": {"preset": "sd", "count": 60 if quick else common.FULL_VIDEOS, "seed": 1},
            "memory_ratio": common.MEMORY_RATIO, "drive": "wd-red",
            "server": "nginx", "kinds": list(tuning.KINDS),
            # a `bench tune` tuned.json; None: untuned (see above)
            "tuned": None,
            "rounds": 2 if quick else 4, "seeds": seeds,
            # disturbed rounds re-run, at most this many in all
            "reruns": 2,
            "targets": TARGETS, "resamples": stats.RESAMPLES,
            # on AT_ANSWER figures: {"config", "metric", "at_least" | "below"},
            # e.g. issue 26's {"config": "libception", "metric": "transfer_share", "at_least": 0.75}
            "answer_targets": [],
            "search": common.search_settings(quick, start=2 if quick else 6)}


def steps(s):
    """Rates at most, as every scenario counts them (the seeds come on top)."""
    return s["rounds"] * len(s["kinds"]) * PROBES


def configurations(s):
    """[(label, kind, point, start rate)]: the tuned winners, or the
    untuned fallback (and a note saying which)."""
    server = s["server"]
    tuned = {}
    if s["tuned"]:
        with open(s["tuned"], encoding="utf-8") as f:
            tuned = json.load(f).get(server, {})
    if tuned.get("vanilla"):
        vanilla = tuned["vanilla"]["point"]
        note = f"tuned ({s['tuned']})"
    else:
        tunables, source = common.best_tunables(server)
        vanilla = {**tuning.start_point(server, "vanilla"),
                   **{k: v for k, v in tunables.items() if k in dict(tuning.SERVER_GRID[server])}}
        note = f"UNTUNED: vanilla from {source}; run `libception bench tune` first"
    out = []
    for item in s["kinds"]:
        # a kind, or {"label", "kind", "set": {knob: value}, "from": kind}:
        # a point with knobs changed (e.g. libception with order fifo),
        # taken with its answer from the tuning of "from" (the item's own
        # kind by default): watch mode at libception's winner is
        # {"label": "watch", "kind": "watch", "from": "libception"}
        label, kind, changes, source = (
            (item, item, {}, item) if isinstance(item, str) else
            (item["label"], item["kind"], item.get("set") or {}, item.get("from", item["kind"])))
        if tuning.grid(server, source, s["disk"]) != tuning.grid(server, kind, s["disk"]):
            raise ValueError(f"compare: {label}: {kind} does not take {source}'s knobs")
        entry = tuned.get(source) or {}
        point = entry.get("point") or (vanilla if source == "vanilla" else
                                       tuning.start_point(server, source, vanilla, s["disk"]))
        out.append((label, kind, {**point, **changes}, entry.get("answer")))
    return out, note


def disturbance(outcome):
    """The first disturbance a probe of this search kept: other load above
    the threshold even in the probe's own re-run (probe.py re-runs a
    disturbed probe once; the kept record's `other_cpu` says whether its
    second run was disturbed too)."""
    for p in outcome.get("probes") or []:
        if p.get("superseded"):
            continue
        oc = p.get("other_cpu") or {}
        if oc.get("disturbed"):
            return f"other load {oc.get('cores', 0):.2f} cores at {p['rate']:g}/s seed {p['seed']}"
        if p.get("disturbance"):
            return str(p["disturbance"])
    return None


def machines(outcomes):
    """A round measured on more than one machine (a run carried to another
    machine midway: docs/benchmark.md, "Carrying a run to another
    machine") is disturbed: its configurations were not measured side by
    side, and the same probe differs between machines."""
    boots = {p.get("boot_id") for o in outcomes.values() for p in o.get("probes") or []
             if not p.get("superseded")} - {None}
    return f"measured on {len(boots)} machines (carried midway)" if len(boots) > 1 else None


def round_of(entry):
    """The round a journal entry or run measured, None outside rounds."""
    point = entry.get("point") or {}
    return point.get("round") if point.get("part") == "round" else None


def restarts(rig, upto):
    """Rounds 1..upto that restart_here began again (on the journal: the
    same count on every resume), each taking one of `reruns`."""
    if rig.journal is None:
        return 0
    return len({(e["restart"]["round"], e["restart"]["on"]) for e in rig.journal.entries()
                if e.get("restart") and e["restart"]["round"] <= upto})


def restart_here(rig, n, measure):
    """Round n, begun on another machine and left unfinished there (a run
    carried midway), starts again on this one: its probes from there are
    superseded (they stay in the journal, marked `restart`) and measured
    again here, so that one machine measures the whole round (machines()).
    The round would be re-run whole otherwise, once finished; this costs
    only the part the other machine measured, and, as a re-run, is decided
    by where the probes ran, never by their results.  A round the journal
    holds whole is left as it is (`measure` is tried on the journal
    alone: rig.replays)."""
    if rig.journal is None:
        return
    here = results.boot_id()

    def elsewhere(e):
        return (round_of(e) == n and not e.get("superseded")
                and e["probe"].get("boot_id") not in (None, here))
    if not any(elsewhere(e) for e in rig.journal.entries()) or rig.replays(measure):
        return
    count = rig.journal.supersede(
        elsewhere, f"round {n} unfinished when the run moved to another machine",
        restart={"round": n, "on": here})
    rig.results.discard(lambda r: round_of(r) == n)
    rig.log(f"compare: round {n}: begun on another machine and unfinished there: "
            f"measuring again here what that machine measured of it ({count} of its probes, "
            "superseded, kept in the journal)")


def run(rig, s):
    base = base_config(rig, s)
    configs, note = configurations(s)
    labels = [c[0] for c in configs]
    rig.log(f"compare: {s['server']}: {note}")
    if s["seeds"] < 3 and not s.get("quick"):
        rig.log(f"compare: warning: {s['seeds']} seeds, fewer than the pass rule's 3")
    # every seed at every rate: the bootstrap needs each (rate, seed) verdict
    search = dict(s["search"], seeds=s["seeds"], all_seeds=True)
    rounds = []   # {"n", "order", "outcomes", "disturbance", "rerun_of"}
    slot, reruns, pending = 0, 0, None
    while sum(1 for r in rounds if not r["disturbance"]) < s["rounds"]:
        n = len(rounds) + 1
        order = pending["order"] if pending else \
            [configs[i] for i in stats.balanced_order(len(configs), slot)]

        def measure(order=order, n=n):
            out = {}
            for label, kind, point, start in order:
                cfg = tuning.configure(base, s["server"], kind, point)
                # a kind with no tuned answer starts its later rounds at the
                # first answer it got: a search from the guess spends three
                # or four rates on every seed finding the bracket, each round
                start = start or first_answer(rounds, label)
                # from a measured answer, step by the resolution, not by doubling
                step = {"growth": 1 + search.get("rel_resolution", 0.1)} if start else {}
                out[label] = rig.max_rate(
                    cfg, f"r{n}-{label}", dict(search, start=start or search["start"], **step),
                    {"part": "round", "round": n, "config": label})
            return out
        if reruns + restarts(rig, n) < s["reruns"]:
            restart_here(rig, n, measure)
        outcomes = measure()
        why = next((d for d in (disturbance(outcomes[lab]) for lab in labels) if d),
                   None) or machines(outcomes)
        rounds.append({"n": n, "order": [c[0] for c in order], "outcomes": outcomes,
                       "disturbance": why, "rerun_of": pending["n"] if pending else None,
                       "restarted": restarts(rig, n) - restarts(rig, n - 1)})
        if why and reruns + restarts(rig, n) < s["reruns"]:
            reruns += 1
            pending = {"n": n, "order": order}
        else:
            if why:   # out of re-runs: it counts, and says so
                rounds[-1]["disturbance"] = None
                rounds[-1]["kept_despite"] = why
            pending = None
            slot += 1
    summary = summarize(rounds, labels, s)
    rig.results.add({"part": "summary"}, note=note, **summary)
    for line in report(summary, s):
        rig.log_plain(f"libception bench: {line}")
    return 0


def first_answer(rounds, label):
    """The first answer `label` got in the rounds so far (on a resume the
    journal replays them alike, so a later round's start does not move)."""
    return next((r["outcomes"][label]["answer"] for r in rounds
                 if r["outcomes"][label].get("answer") is not None), None)


def summarize(rounds, labels, s):
    """Per round answers and ratios, and each target's interval (plain
    data, as recorded)."""
    max_fail = s["search"].get("max_fail", 0.3)
    data = [{lab: stats.verdicts_from_probes(r["outcomes"][lab].get("probes") or [], max_fail)
             for lab in labels} for r in rounds]
    table = stats.round_table(data, labels)
    for row, r in zip(table, rounds):
        row.update(order=r["order"], disturbance=r["disturbance"], rerun_of=r["rerun_of"],
                   kept_despite=r.get("kept_despite"), restarted=r.get("restarted", 0))
        row["capped"] = [lab for lab in labels
                         if r["outcomes"][lab].get("answer") is not None
                         and r["outcomes"][lab].get("failed_above") is None]
    used = [d for d, r in zip(data, rounds) if not r["disturbance"]]
    ratios = []
    for t in s["targets"]:
        if t["num"] not in labels or t["den"] not in labels:
            continue
        iv = stats.ratio_interval(used, t["num"], t["den"], resamples=s["resamples"])
        ratios.append({**t, **iv, "met": stats.target_met(iv, t["at_least"])})
    figures = {lab: at_answer(rounds, table, lab, s["resamples"]) for lab in labels}
    checks = [{**t, **answer_target(figures, t)} for t in s.get("answer_targets") or []]
    commits = sorted({str(r["outcomes"][lab].get("git_commit")) for r in rounds for lab in labels})
    return {"rounds": table, "ratios": ratios, "seeds": s["seeds"],
            "rounds_used": len(used), "commits": commits,
            "at_answer": figures, "answer_targets": checks}


def at_answer(rounds, table, label, resamples):
    """Each AT_ANSWER figure of one configuration over the rounds that
    count: its probes at that round's answer rate, every seed, with a 95%
    interval (stats.mean_interval).  A figure no probe recorded (no
    hddsim, no daemon) is left out."""
    out = {}
    for name, get in AT_ANSWER.items():
        groups = []
        for r, row in zip(rounds, table):
            rate = row["answers"].get(label)
            if r["disturbance"] or rate is None:
                continue
            probes = [p for p in r["outcomes"][label].get("probes") or []
                      if not p.get("superseded") and float(p["rate"]) == rate]
            groups.append([v for v in map(get, probes) if v is not None])
        if any(groups):
            out[name] = stats.mean_interval(groups, resamples=resamples)
    return out


def answer_target(figures, t):
    """A target on a figure at the answer, met only when the whole
    interval clears it: its lower end for "at_least", its upper end for
    "below"."""
    iv = figures.get(t["config"], {}).get(t["metric"])
    if iv is None:
        return {"mean": None, "low": None, "high": None, "met": False}
    met = iv["low"] >= t["at_least"] if "at_least" in t else iv["high"] < t["below"]
    return {"mean": iv["mean"], "low": iv["low"], "high": iv["high"], "met": bool(met)}


def _rate(x):
    return "-" if x is None else f"{x:g}"


def report(summary, s):
    commits = summary["commits"]
    lines = [f"at commit {commits[0]}" if len(commits) == 1 else
             f"WARNING: the rounds ran at {len(commits)} commits ({', '.join(commits)}): "
             "not one comparison"]
    for row in summary["rounds"]:
        answers = ", ".join(f"{lab} {_rate(row['answers'].get(lab))}"
                            + ("(capped)" if lab in row["capped"] else "")
                            for lab in row["order"])
        mark = ""
        if row["disturbance"]:
            mark = f"  DISTURBED ({row['disturbance']}): re-run, not in the intervals"
        elif row["rerun_of"]:
            mark = f"  re-run of round {row['rerun_of']}"
        if row.get("restarted"):
            mark += (f"  begun again after a move to another machine ({row['restarted']}x; "
                     "the earlier machine's probes superseded)")
        if row.get("kept_despite"):
            mark += f"  disturbed ({row['kept_despite']}), no re-run left: counted"
        lines.append(f"round {row['round']}: {answers} sessions/s{mark}")
    for r in summary["ratios"]:
        low, high = (f"{x:.2f}" if not math.isnan(x) else "-" for x in (r["low"], r["high"]))
        verdict = "met" if r["met"] else "NOT met"
        lines.append(f"{r['num']} / {r['den']}: {r['ratio']:.2f} (95% interval {low}-{high}, "
                     f"{summary['rounds_used']} rounds x {summary['seeds']} seeds; per round "
                     + " ".join("-" if x["ratio"] is None else f"{x['ratio']:.2f}"
                                for x in r["rounds"])
                     + f"): target >= {r['at_least']:g} {verdict} (lower end {low})")
    for lab, figs in summary.get("at_answer", {}).items():
        if figs:
            lines.append(f"at the answer, {lab}: " + ", ".join(
                f"{name} {figure(iv['mean'])} ({figure(iv['low'])}-{figure(iv['high'])})"
                for name, iv in figs.items()))
    for t in summary.get("answer_targets", []):
        bound = f">= {t['at_least']:g}" if "at_least" in t else f"< {t['below']:g}"
        lines.append(f"{t['config']} {t['metric']}: {figure(t['mean'])} (95% interval "
                     f"{figure(t['low'])}-{figure(t['high'])}): target {bound} "
                     + ("met" if t["met"] else "NOT met"))
    return lines


def figure(x):
    """A figure at an answer, three significant digits ("-": none)."""
    if x is None or math.isnan(x):
        return "-"
    return f"{x:.0f}" if abs(x) >= 100 else f"{x:.3g}"
