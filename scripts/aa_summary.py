#!/usr/bin/env python3
"""Summarize the adaptive policy's comparison against itself.

    python3 scripts/aa_summary.py receptiond.log [...]

Reads the "A/A side by side" decisions a receptiond run with
`--policy adaptive:compare=aa` logged (docs/prefetch-sizing.md; the runs
behind it: docs/notes/2026-11-26-prefetch-sizing-reference.md, "The
comparison against itself").  Decisions pool up to four intervals, so
consecutive ones share windows; only the last decision of each pool (the
next one's span is shorter) counts, as one independent sample.  Per trial
group: its score over the current group's (geometric mean, with the
standard error of the mean log ratio), the mean distance in standard
errors the daemon computed, and the score's two parts (disk time per MiB
read, bytes read per byte used) over the current group's.
"""
import math
import re
import sys

SCORE = (r"([\d.e+]+)\+-(\d+)% of (\d+) streams "
         r"\(([\d.e+]+) ms/MiB read, read/used ([\d.]+)\)")
VERSUS = r"(?:, [\d.e+]+x current \(([+-][\d.]+) standard errors\))?"
DECISION = re.compile(r"A/A side by side over (\d+) s, every group at this size: current "
                      + SCORE + r"; smaller's group (?:-|" + SCORE + r")" + VERSUS
                      + r"; larger's group (?:-|" + SCORE + r")" + VERSUS)
# where each group's fields start in a match's groups()
GROUPS = (("smaller", 6, 11), ("larger", 12, 17))


def pools(path):
    """The last decision of each pool, as regex groups."""
    rows = []
    with open(path, errors="replace") as f:
        for line in f:
            m = DECISION.search(line)
            if m:
                rows.append(m.groups())
    return [g for i, g in enumerate(rows)
            if i + 1 == len(rows) or int(rows[i + 1][0]) < int(g[0])], len(rows)


def summarize(path):
    last, decisions = pools(path)
    print(f"{path}: {decisions} decisions, {len(last)} pools")
    for name, at, z_at in GROUPS:
        ratio, z, disk, waste = [], [], [], []
        for g in last:
            if g[at] is None:
                continue
            ratio.append(math.log(float(g[at]) / float(g[1])))
            z.append(float(g[z_at]))
            disk.append(math.log(float(g[at + 3]) / float(g[4])))
            waste.append(math.log(float(g[at + 4]) / float(g[5])))
        n = len(ratio)
        if not n:
            print(f"  {name}'s group: never scored")
            continue
        mean = sum(ratio) / n
        se = (sum((x - mean) ** 2 for x in ratio) / (n - 1) / n) ** 0.5 if n > 1 else float("nan")
        print(f"  {name}'s group: {math.exp(mean):.3f}x current (+-{se:.3f} in log), "
              f"mean {sum(z) / n:+.2f} standard errors; disk time per MiB read "
              f"{math.exp(sum(disk) / n):.3f}x, read per used {math.exp(sum(waste) / n):.3f}x; "
              f"above current in {sum(x > 0 for x in ratio)} of {n}")


def main(argv):
    if len(argv) < 2:
        sys.exit("usage: aa_summary.py RECEPTIOND_LOG [...]")
    for path in argv[1:]:
        try:
            summarize(path)
        except OSError as e:
            sys.exit(f"aa_summary.py: {path}: {e.strerror}")


if __name__ == "__main__":
    main(sys.argv)
