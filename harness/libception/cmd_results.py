"""Summarize a benchmark run's raw results (`libception results summarize DIR`).

The summary (docs/benchmark.md, "Results files") holds the run's
metadata, its answers with the disk figures at each, and one row per
probe: a few KB, for docs/results/; the raw files stay in DIR.
"""
import os
import sys

from . import results, summary

PROG = "libception results"


def add_arguments(p):
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    s = sub.add_parser("summarize", help="write the summary of a run directory")
    s.add_argument("run", metavar="DIR", help="a `libception bench` output directory")
    s.add_argument("-o", "--output", metavar="FILE",
                   help="where to write it (default DIR/summary.json)")


def main(args):
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
