"""A run's summary as docs/results.md shows it: `libception results table`.

docs/results.md holds one table per scenario with its intervals, date,
commit, disk and exact command (issue 24).  Copying those numbers by
hand is how a results page drifts from its data, so the page's tables
are printed from the summary (summary.py) and pasted whole.  A
comparison (`bench compare`) gives every round, each ratio with its 95%
interval and target verdict, and the disk and queue figures at each
configuration's answer; any other run gives its answers.
"""
import math

from .bench.compare import figure, round_of

NAMES = {"transfer_share": "disk transferring", "busy_share": "disk busy",
         "queue_wait_p99_ms": "queue wait p99 (ms)",
         "position_ms_per_window": "positioning per window (ms)",
         "disk_mb_per_window": "disk MB per window"}


def _ratio(x):
    return "-" if x is None or math.isnan(x) else f"{x:.2f}"


def _interval(iv):
    """mean (low-high), or "-" for a figure nobody recorded."""
    if not iv or iv.get("mean") is None or math.isnan(iv["mean"]):
        return "-"
    return f"{figure(iv['mean'])} ({figure(iv['low'])}-{figure(iv['high'])})"


def _row(cells):
    return "| " + " | ".join(str(c) for c in cells) + " |"


def markdown_table(head, rows):
    """A Markdown table: the header row, its rule, then `rows`."""
    return [_row(head), _row(["---"] * len(head))] + [_row(r) for r in rows]


def header(meta):
    """Where, when and how: the lines above a table."""
    disk = meta.get("disk") or {}
    lib = disk.get("library") or {}
    where = {"block": f"block disk ({disk.get('fs') or 'ext4'})", "fuse": "FUSE disk"}.get(
        disk.get("kind"), "disk unrecorded")
    library = (f"{lib['count']:,} {lib.get('preset', '').upper()} videos".replace("  ", " ")
               if lib.get("count") else "library unrecorded")
    limit = disk.get("memory_limit")
    memory = (f"memory group {limit / 2**20:,.0f} MiB" if isinstance(limit, (int, float))
              else "memory group unrecorded")
    commits = [c[:7] for c in meta.get("commits") or [meta.get("git_commit")] if c]
    when = meta.get("measured") or [meta.get("date"), meta.get("date")]
    span = f"{when[0][:16].replace('T', ' ')} to {when[1][:16].replace('T', ' ')} UTC" \
        if when and when[0] else "time unrecorded"
    lines = [f"Commit {', '.join(commits) or 'unrecorded'}; {span}; emulated "
             f"{disk.get('drive') or 'drive'} on the {where}, {library}, {memory}; "
             f"method {meta.get('method')}; {meta.get('probes')} probes "
             f"({meta.get('reruns')} re-run for other load, {meta.get('not_steady')} not steady, "
             f"{meta.get('boots')} machine{'s' * (meta.get('boots') != 1)})."]
    if meta.get("command"):
        lines += ["", "    " + " ".join(_quote(a) for a in meta["command"])]
    return lines


def _quote(arg):
    return f"'{arg}'" if any(c in arg for c in " \"[]{}*$") else arg


def comparison(summary):
    """Every round, the ratios against their targets, and the figures at
    each configuration's answer."""
    cmp = summary["comparison"]
    labels = list(dict.fromkeys(lab for r in cmp["rounds"] for lab in r["order"]))
    config = {a["point"].get("config"): a["config"] for a in summary["answers"]
              if round_of(a) == 1}
    lines = ["Maximum failure-free sessions/s per round (every round that ran, in its "
             "order):", ""]
    rows = []
    for r in cmp["rounds"]:
        note = ("disturbed: " + r["disturbance"] + ", not counted" if r.get("disturbance")
                else f"re-run of round {r['rerun_of']}" if r.get("rerun_of") else "")
        if r.get("kept_despite"):
            note = f"disturbed ({r['kept_despite']}), counted: no re-run left"
        rows.append([r["round"], " ".join(r["order"])]
                    + [figure(r["answers"].get(lab))
                       + (" (capped)" if lab in (r.get("capped") or []) else "")
                       for lab in labels] + [note or "-"])
    lines += markdown_table(["round", "order"] + labels + ["note"], rows)
    lines += ["", f"Ratios over {cmp['rounds_used']} counted rounds x {cmp['seeds']} seeds "
              "(95% interval, two-stage bootstrap; met only when its lower end clears the "
              "target):", ""]
    rows = [[f"{t['num']} / {t['den']}", _ratio(t["ratio"]),
             f"{_ratio(t['low'])}-{_ratio(t['high'])}",
             " ".join(_ratio(x["ratio"]) for x in t["rounds"]),
             f">= {t['at_least']:g}", "met" if t["met"] else "**not met**"]
            for t in cmp["ratios"]]
    lines += markdown_table(["ratio", "value", "interval", "per round", "target", "verdict"], rows)
    figures = [n for n in NAMES if any(n in f for f in cmp["at_answer"].values())]
    lines += ["", "At each configuration's answer, mean over rounds and seeds (95% "
              "interval):", ""]
    lines += markdown_table(["configuration"] + [NAMES[n] for n in figures] + ["settings"],
                            [[lab] + [_interval(cmp["at_answer"].get(lab, {}).get(n))
                                      for n in figures]
                             + [config.get(lab) or "-"] for lab in labels])
    if cmp.get("answer_targets"):
        lines += ["", "Targets on those figures (met only when the whole interval clears "
                  "the bound):", ""]
        lines += markdown_table(["configuration", "figure", "target", "value", "verdict"],
                                [[t["config"], NAMES.get(t["metric"], t["metric"]),
                                  f">= {t['at_least']:g}" if "at_least" in t
                                  else f"< {t['below']:g}",
                                  _interval(t), "met" if t["met"] else "**not met**"]
                                 for t in cmp["answer_targets"]])
    return lines


def answers(summary):
    """A run that is not a comparison: each configuration's answer and the
    figures of the probe at it (one seed's: no interval)."""
    rows = []
    for a in summary["answers"]:
        at = a.get("at_answer") or {}
        rows.append([a.get("config") or "-",
                     "unfinished" if a.get("unfinished") else figure(a.get("answer")),
                     figure(a.get("failed_above")), figure(at.get("transfer_share")),
                     figure(at.get("busy_share")), figure(at.get("queue_wait_p99_ms"))])
    return markdown_table(["configuration", "answer (sessions/s)", "first failing rate",
                           NAMES["transfer_share"], NAMES["busy_share"],
                           NAMES["queue_wait_p99_ms"]],
                          rows)


def markdown(summary):
    """The lines of the run's section body in docs/results.md."""
    body = comparison(summary) if summary.get("comparison") else answers(summary)
    return header(summary["metadata"]) + [""] + body
