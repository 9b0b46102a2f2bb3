#!/usr/bin/env python3
"""Summaries of the raw results files of before issue 24's format.

    python3 scripts/summarize_legacy_results.py FILE... --out-dir DIR [--raw-commit COMMIT] [--docs MD...]

Writes DIR/NAME.json for each FILE (harness/libception/legacy_results.py
says what a summary holds).  --raw-commit records the commit whose tree
holds the raw file, for files taken out of the tracked tree (`git show
COMMIT:PATH` brings one back).  --docs names the Markdown files whose
sections describe the runs and give their commands (the old files did
not record them): each summary lists those that name it.
docs/results/summaries/ was made with

    python3 scripts/summarize_legacy_results.py docs/results/json/*.json \\
        --out-dir docs/results/summaries --raw-commit 9999c70 --docs docs/notes/2026-11-2*.md

A run directory of the current format: `libception results summarize DIR`.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness"))
from libception import legacy_results  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("--out-dir", required=True, metavar="DIR")
    p.add_argument("--raw-commit", metavar="COMMIT")
    p.add_argument("--docs", nargs="+", default=[], metavar="MD")
    args = p.parse_args(argv)
    for path in args.files:
        try:
            s = legacy_results.summarize_path(path, rel_to=os.getcwd(), raw_commit=args.raw_commit,
                                              docs=args.docs)
        except (OSError, ValueError) as e:
            print(f"summarize_legacy_results: \"{path}\": {e}", file=sys.stderr)
            return 1
        out = os.path.join(args.out_dir, os.path.basename(path))
        legacy_results.write(s, out)
        print(f"{out}: {os.path.getsize(out)} bytes, {len(s['answers'])} answers, "
              f"{len(s['probe_rows'])} probes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
