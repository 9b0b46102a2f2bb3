"""A benchmark run's raw results, made small: `libception results
summarize DIR` and `libception results carry DIR FILE`.

The summary (docs/benchmark.md, "Results files") holds the run's
metadata, its answers with the disk figures at each, and one row per
probe: a few KB, for docs/results/; the raw files stay in DIR.  The
carried journal is the run's probes without their bulk, what a run
needs to be resumed on another machine ("Carrying a run to another
machine").
"""
import os
import sys

from . import results, summary
from .bench import journal

PROG = "libception results"


def add_arguments(p):
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    s = sub.add_parser("summarize", help="write the summary of a run directory")
    s.add_argument("run", metavar="DIR", help="a `libception bench` output directory")
    s.add_argument("-o", "--output", metavar="FILE",
                   help="where to write it (default DIR/summary.json)")
    c = sub.add_parser("carry", help="write a run's journal without its bulk, to resume it "
                       "on another machine")
    c.add_argument("run", metavar="DIR", help="a `libception bench` output directory")
    c.add_argument("dest", metavar="FILE", help="the carried journal (copy it to a new "
                   f"DIR/{journal.NAME} and resume there)")


def main(args):
    if args.action == "carry":
        return _carry(args)
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
