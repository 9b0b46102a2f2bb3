"""A run's summary: metadata, answers and a per-probe table, a few KB,
made from the run's raw files (SCENARIO.json and probes.jsonl.gz); the
format is docs/benchmark.md's "Results files".  Summaries are what goes
into docs/results/; the raw files stay in the run's directory."""
import glob
import json
import os

from . import results
from .bench import journal

SCHEMA = "libception-bench-summary"
VERSION = 1
PROBE_COLUMNS = ["answer", "rate", "seed", "pass", "failed_pct", "started", "mb_per_s",
                 "disk_mb_per_s", "transfer_share", "busy_share", "queue_wait_p99_ms",
                 "max_active", "steady", "other_cores", "rerun"]


# `bench compare`'s rounds, ratios and intervals: a run under this point
# (bench/compare.py summarize), kept whole in the summary
COMPARISON = {"part": "summary"}
STAMPS = ("point", "git_commit", "measured_at")


def _r(v, digits=3):
    return round(v, digits) if isinstance(v, float) else v


def at_answer(probe):
    """The figures a result row shows for the probe at an answer."""
    if not probe:
        return None
    disk = probe.get("disk_time") or {}
    wait = probe.get("queue_wait_ms") or {}
    return {"failed_pct": _r(probe.get("failed_pct")), "mb_per_s": _r(probe.get("mb_per_s")),
            "disk_mb_per_s": _r(disk.get("mb_per_s", probe.get("disk_mb_per_s"))),
            "transfer_share": disk.get("transfer_share"), "busy_share": disk.get("busy_share"),
            "queue_wait_p99_ms": wait.get("p99"),
            "steady": (probe.get("steady") or {}).get("steady")}


def probe_row(index, probe):
    a = at_answer(probe)
    return [index, probe["rate"], probe["seed"], probe["pass"], a["failed_pct"],
            probe.get("started"), a["mb_per_s"], a["disk_mb_per_s"], a["transfer_share"],
            a["busy_share"], a["queue_wait_p99_ms"], probe.get("max_active"), a["steady"],
            (probe.get("other_cpu") or {}).get("cores"), bool(probe.get("rerun"))]


def _describe(config):
    from .bench.rig import describe
    return describe(config) if config else None


def summarize(data, entries):
    """The summary of a run from its SCENARIO.json (`data`) and its
    journal entries."""
    answers, index = [], {}

    def answer_for(point, config=None):
        key = results.point_key(point)
        if key not in index:
            index[key] = len(answers)
            answers.append({"point": point, "config": _describe(config), "answer": None,
                            "failed_above": None, "at_answer": None, "unfinished": True})
        return index[key]

    comparison = None
    for run in data.get("runs", []):
        if run.get("point") == COMPARISON:
            comparison = {k: v for k, v in run.items() if k not in STAMPS}
        if "answer" not in run and "probe" not in run:
            continue
        i = answer_for(run["point"], run.get("config"))
        if "answer" in run:
            answer, above, probe = run["answer"], run.get("failed_above"), run.get("at_answer")
        else:   # one probe at a fixed rate (a tuning challenge): an answer only if it passed
            probe = run.get("probe") or {}
            answer, above = (run.get("rate"), None) if probe.get("pass") else (None, run.get("rate"))
        answers[i].update({"answer": answer, "failed_above": above,
                           "at_answer": at_answer(probe)})
        answers[i].pop("unfinished")
    kept = [e for e in entries if not e.get("superseded")]
    rows = [probe_row(answer_for(e["point"]), e["probe"]) for e in kept]
    settings = data.get("settings") or {}
    limits = {e["probe"].get("cgroup_limit") for e in kept} - {None}
    times = [e["measured_at"] for e in kept if e.get("measured_at")]
    meta = {"scenario": data.get("scenario"), "command": data.get("command"),
            "git_commit": data.get("git_commit"), "date": data.get("date"),
            "machine": data.get("machine"),
            "disk": {"drive": settings.get("drive"), "library": settings.get("library"),
                     "memory_limit": sorted(limits)[0] if len(limits) == 1 else sorted(limits),
                     "kind": settings.get("disk"), "fs": settings.get("fs")},
            # when and at which commits the kept probes ran (a resumed
            # run spans sessions, and commits with --across-commits)
            "measured": [min(times), max(times)] if times else None,
            "commits": journal.commits(kept),
            "method": data.get("method", settings.get("method")),
            "search": settings.get("search"), "probes": len(kept),
            "boots": len({e["probe"].get("boot_id") for e in kept} - {None}),
            "reruns": sum(1 for e in kept if e["probe"].get("rerun")),
            "not_steady": sum(1 for e in kept
                              if (e["probe"].get("steady") or {}).get("steady") is False)}
    out = {"schema": SCHEMA, "version": VERSION, "metadata": meta, "answers": answers,
           "probe_columns": PROBE_COLUMNS, "probe_rows": rows}
    if comparison:
        out["comparison"] = comparison
    return out


def probes_of(summary):
    """The probe table as dicts (column: value)."""
    return [dict(zip(summary["probe_columns"], row)) for row in summary["probe_rows"]]


def run_files(directory):
    """(SCENARIO.json data, journal entries) of a run directory."""
    found = [p for p in glob.glob(os.path.join(directory, "*.json"))
             if os.path.basename(p) not in ("best.json", "summary.json")]
    for path in sorted(found):
        try:
            data = results.load(path)
        except results.ResultsError:
            continue
        return data, journal.read(os.path.join(directory, journal.NAME))
    raise results.ResultsError(f"{directory}: no libception-bench results file (SCENARIO.json)")


def write(path, summary):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=1)
        f.write("\n")
