"""Share of bytes read in sequences up to a given length, from an hddsim trace (Fig. 6 of the Libception paper).

A sequence is a maximal run of consecutive drive commands (in the order the
drive served them) each starting exactly where the previous one ended;
metadata reads are excluded (they neither extend nor break a sequence; the
seek they cause shows as the next data read not continuing).  For each
length L the output gives the percentage of all bytes read that lie in
sequences of at most L bytes.
"""
import json
import os
import sys

DEFAULT_KIB = [128, 256, 384, 512, 576, 1024, 1792, 1920, 2048, 4096, 8192, 16384]


def sequences(path):
    """Lengths in bytes of the trace's sequences, in order."""
    out, cur, end = [], 0, None
    with open(path, encoding="ascii") as f:
        for lineno, line in enumerate(f, 1):
            if line.startswith("#") or not line.strip():
                continue
            fields = line.split()
            if len(fields) not in (9, 10):  # 10: with the pid (since 2026-11-26)
                raise ValueError(f"line {lineno}: expected 9 or 10 fields, got {len(fields)}")
            if fields[8] == "meta":
                continue
            pos, size = int(fields[1]), int(fields[2])
            if pos != end and cur:
                out.append(cur)
                cur = 0
            cur += size
            end = pos + size
    if cur:
        out.append(cur)
    return out


def cdf(seqs, lengths):
    total = sum(seqs) or 1
    return [(L, 100.0 * sum(s for s in seqs if s <= L) / total) for L in lengths]


def add_arguments(p):
    p.add_argument("trace", help="trace file written by hddsim --trace")
    p.add_argument("--kib", type=int, nargs="+", default=DEFAULT_KIB, help="lengths L in KiB")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--plot", metavar="PNG", help="also draw the CDF (matplotlib)")


def main(args):
    try:
        seqs = sequences(args.trace)
    except OSError as e:
        print(f"seqcdf: trace \"{args.trace}\": {e.strerror}", file=sys.stderr)
        return 1
    except ValueError as e:
        print(f"seqcdf: trace \"{args.trace}\": {e}", file=sys.stderr)
        return 1
    rows = cdf(seqs, [k * 1024 for k in args.kib])
    try:
        report(args, seqs, rows)
    except BrokenPipeError:  # e.g. piped into head
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    if args.plot:
        plot(args, seqs)
    return 0


def report(args, seqs, rows):
    if args.json:
        print(json.dumps({"sequences": len(seqs), "bytes": sum(seqs),
                          "cdf": [{"kib": L // 1024, "percent": p} for L, p in rows]}))
    else:
        print(f"seqcdf: {len(seqs)} sequences, {sum(seqs) / 1e6:.1f} MB read")
        for L, p in rows:
            print(f"seqcdf: <= {L // 1024:6d} KiB  {p:6.2f} % of bytes")
    sys.stdout.flush()


def plot(args, seqs):
    """Draw the CDF of bytes over sequence length into args.plot."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    xs = sorted(seqs)
    total, acc, ys = sum(xs) or 1, 0, []
    for s in xs:
        acc += s
        ys.append(100.0 * acc / total)
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.step([x / 1024 for x in xs], ys, where="post")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("sequence length (KiB)")
    ax.set_ylabel("% of bytes in sequences <= length")
    ax.set_title(args.trace)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(args.plot)
