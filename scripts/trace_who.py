#!/usr/bin/env python3
"""Who read what from an hddsim disk, and what its short reads cost.

    python3 scripts/trace_who.py WORK [...]

WORK is a bench work dir run with `--set hddsim='{"trace": true}'`: each
configuration's LABEL/disk-trace-mnt.txt (hddsim's trace, whose last
column names the thread the kernel read for) and LABEL/receptiond.log
(the daemon's pid).  Per configuration: commands and one-page commands of
receptiond's threads and of everyone else (the program); the short misses
(at most 16 KiB, with a seek) and their share of the disk's busy time;
and how many of them the daemon follows with a read a little further on
(under 1 MiB): the rest of a window past a resident stretch.
"""
import glob
import os
import re
import statistics
import sys

SHORT = 16 << 10
THREADS = 64   # receptiond's thread ids lie within this many of its pid


def rows_of(path):
    with open(path, encoding="ascii") as f:
        for line in f:
            fields = line.split()
            if not line.startswith("#") and len(fields) == 10:
                yield fields


def report(cfg_dir):
    with open(os.path.join(cfg_dir, "receptiond.log"), encoding="utf-8") as f:
        dpid = int(re.search(r"\(pid (\d+)", f.read()).group(1))
    rows = list(rows_of(os.path.join(cfg_dir, "disk-trace-mnt.txt")))
    who = {"receptiond": [0, 0], "program": [0, 0]}
    busy = short_us = 0.0
    shorts, rest = 0, []
    data = [r for r in rows if r[8] != "meta"]
    for r in rows:
        w = who["receptiond" if dpid <= int(r[9]) < dpid + THREADS else "program"]
        w[0] += 1
        w[1] += int(r[2]) <= 4096
        busy += float(r[5]) + float(r[6])
    for r, nxt in zip(data, data[1:]):
        if int(r[2]) <= SHORT and r[8] == "miss":
            shorts += 1
            short_us += float(r[5]) + float(r[6])
            gap = int(nxt[1]) - (int(r[1]) + int(r[2]))
            if 0 <= gap < 1 << 20:
                rest.append(gap)
    print(os.path.basename(cfg_dir))
    for name, (cmds, pages) in who.items():
        print(f"  {name:10s} {cmds:8d} commands, {pages:6d} of one page")
    if shorts and busy:
        print(f"  short misses {shorts} took {100 * short_us / busy:.1f}% of busy; "
              f"{100 * len(rest) / shorts:.0f}% followed by a read "
              f"{statistics.median(rest) / 1024 if rest else 0:.0f} KiB on (median)")


def main(argv):
    if not argv:
        sys.exit(__doc__.strip().splitlines()[2].strip())
    for work in argv:
        found = sorted(glob.glob(os.path.join(work, "*", "disk-trace-mnt.txt")))
        if not found:
            sys.exit(f"trace_who: {work}: no LABEL/disk-trace-mnt.txt (run with hddsim trace on)")
        for path in found:
            report(os.path.dirname(path))


if __name__ == "__main__":
    main(sys.argv[1:])
