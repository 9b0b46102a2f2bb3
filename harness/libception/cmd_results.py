"""A benchmark run's raw results, made small: `libception results
summarize DIR`, `libception results table DIR|SUMMARY`, `libception
results probes DIR` and `libception results carry DIR FILE`.

The summary (docs/benchmark.md, "Results files") holds the run's
metadata, its answers with the disk figures at each, a comparison's
rounds and intervals, and one row per probe: a few KB, for
docs/results/; the raw files stay in DIR.  The table is that summary as
docs/results.md shows it (Markdown); the probes, one row per probe as
the campaign notes keep them.  The carried journal is the run's
probes without their bulk, what a run needs to be resumed on another
machine ("Carrying a run to another machine").
"""
import json
import os
import sys

from . import probe_table, results, results_table, summary
from .bench import journal

PROG = "libception results"


def add_arguments(p):
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    s = sub.add_parser("summarize", help="write the summary of a run directory")
    s.add_argument("run", metavar="DIR", help="a `libception bench` output directory")
    s.add_argument("-o", "--output", metavar="FILE",
                   help="where to write it (default DIR/summary.json)")
    t = sub.add_parser("table", help="print a run's summary as docs/results.md shows it "
                       "(Markdown)")
    t.add_argument("run", metavar="DIR|SUMMARY",
                   help="a `libception bench` output directory or a summary file")
    r = sub.add_parser("probes", help="print every probe of a run, one row each in the "
                       "journal's order (Markdown)")
    r.add_argument("run", metavar="DIR", help="a `libception bench` output directory")
    r.add_argument("--from", dest="first", metavar="N", type=int, default=1,
                   help="start at the journal's Nth probe (default 1)")
    c = sub.add_parser("carry", help="write a run's journal without its bulk, to resume it "
                       "on another machine")
    c.add_argument("run", metavar="DIR", help="a `libception bench` output directory")
    c.add_argument("dest", metavar="FILE", help="the carried journal (copy it to a new "
                   f"DIR/{journal.NAME} and resume there)")


def main(args):
    if args.action == "carry":
        return _carry(args)
    if args.action == "table":
        return _table(args)
    if args.action == "probes":
        return _probes(args)
    try:
        data, entries = summary.run_files(args.run)
    except results.ResultsError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1
    out = args.output or os.path.join(args.run, "summary.json")
    s = summary.summarize(data, entries)
    summary.write(out, s)
    m = s["metadata"]
    print(f"{PROG}: {out}: {len(s['answers'])} configurations, {m['probes']} probes "
          f"({m['reruns']} rerun, {m['not_steady']} not steady), method {m['method']}, "
          f"{os.path.getsize(out)} bytes")
    return 0


def _carry(args):
    try:
        entries = journal.carry(args.run, args.dest)
    except (OSError, ValueError) as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1
    at = ", ".join(c or "unknown" for c in journal.commits(entries))
    print(f"{PROG}: {args.dest}: {len(entries)} probe{'s' * (len(entries) != 1)} measured at {at}, "
          f"{os.path.getsize(args.dest)} bytes; resume in a worktree at that commit")
    return 0


def _probes(args):
    path = os.path.join(args.run, journal.NAME)
    if not os.path.exists(path):
        print(f"{PROG}: {path}: no such journal", file=sys.stderr)
        return 1
    print("\n".join(probe_table.markdown(journal.read(path), args.first)))
    return 0


def _table(args):
    try:
        if os.path.isdir(args.run):
            s = summary.summarize(*summary.run_files(args.run))
        else:
            with open(args.run, encoding="utf-8") as f:
                s = json.load(f)
            if s.get("schema") != summary.SCHEMA:
                raise results.ResultsError(f"{args.run}: not a {summary.SCHEMA} file")
    except (OSError, ValueError, results.ResultsError) as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1
    print("\n".join(results_table.markdown(s)))
    return 0
