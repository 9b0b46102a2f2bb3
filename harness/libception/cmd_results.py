"""Results files: `results summarize` writes the small summary of a run that docs/results/ keeps.

    libception results summarize PATH... [-o FILE | --out-dir DIR] [--raw-commit COMMIT]

PATH is a run directory (SCENARIO.json and probes.jsonl.gz, see
docs/benchmark.md "Results files") or a raw results file of before that
format (docs/results/json/*.json).  The summary (libception/summary.py)
holds the run's metadata, its answers and one row per probe; by default it
goes to DIR/summary.json for a directory, and beside a file as
NAME.summary.json.  --raw-commit names the commit whose tree holds the raw
file, for summaries of files taken out of the tracked tree
(`git show COMMIT:PATH` brings one back).
"""
import os
import sys

from . import summary


def add_arguments(p):
    p.add_argument("action", choices=["summarize"])
    p.add_argument("paths", nargs="+", metavar="PATH")
    out = p.add_mutually_exclusive_group()
    out.add_argument("-o", "--output", metavar="FILE", help="the summary's file (one PATH only)")
    out.add_argument("--out-dir", metavar="DIR", help="write each summary as DIR/NAME.json")
    p.add_argument("--raw-commit", metavar="COMMIT",
                   help="record that the raw data is in this commit's tree")


def _target(args, path):
    if args.output:
        return args.output
    name = os.path.basename(os.path.normpath(path))
    if args.out_dir:
        return os.path.join(args.out_dir, name if name.endswith(".json") else name + ".json")
    if os.path.isdir(path):
        return os.path.join(path, "summary.json")
    return os.path.splitext(path)[0] + ".summary.json"


def main(args):
    if args.output and len(args.paths) > 1:
        print("results: -o takes one PATH; use --out-dir for several", file=sys.stderr)
        return 2
    repo = os.getcwd()
    for path in args.paths:
        try:
            s = summary.summarize_path(path, rel_to=repo)
        except (OSError, ValueError) as e:
            print(f"results: \"{path}\": {e}", file=sys.stderr)
            return 1
        if args.raw_commit:
            s["metadata"]["raw"]["git"] = args.raw_commit
        out = _target(args, path)
        summary.write(s, out)
        print(f"{out}: {os.path.getsize(out)} bytes, {len(s['answers'])} answers, "
              f"{len(s['probe_rows'])} probes")
    return 0
