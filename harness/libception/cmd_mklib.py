"""Write a video library file (lcvl 1) like the papers' video libraries.

Presets (seeded, reproducible: same arguments, same file):
  sd     20,000 videos at 419430 b/s (0.5 MiB per 10 s, the papers' "419 kbps")
  hd      8,000 videos at 2097150 b/s (5x SD, 2.5 MiB per 10 s, the papers' "2095 kbps")
  mixed  20,000 videos, each SD or HD with probability 1/2 (SYSTOR 2014, section 7.4)
Durations: log-normal with sigma 0.8 (median 0.73x the mean), clipped to
[10 s, 3600 s], whole seconds, then scaled so the library's mean duration is
--duration-mean (265 s, the YouTube-2011 mean the papers use).  Videos are
listed (laid out on the platter) in index order; for mixed the SD/HD choice is
random per video, so both kinds are spread over the whole library.
"""
import math
import random
import sys

SD_BITRATE = 419430          # 0.5 MiB per 10 s
HD_BITRATE = 5 * SD_BITRATE  # 2.5 MiB per 10 s
PRESETS = {"sd": (20000, 0.0), "hd": (8000, 1.0), "mixed": (20000, 0.5)}
SIGMA = 0.8
MIN_S, MAX_S = 10, 3600


def durations(rng, count, mean):
    """Whole-second durations whose mean is `mean` (to within rounding)."""
    mu = math.log(mean) - SIGMA * SIGMA / 2
    raw = [min(MAX_S, max(MIN_S, rng.lognormvariate(mu, SIGMA))) for _ in range(count)]
    scale = mean * count / sum(raw)
    return [max(MIN_S, round(d * scale)) for d in raw]


def generate(preset="sd", count=None, seed=1, chunk=0, duration_mean=265.0):
    """The library as a list of (name, bytes, bitrate, chunk) tuples."""
    default_count, hd_share = PRESETS[preset]
    count = default_count if count is None else count
    rng = random.Random(seed)
    durs = durations(rng, count, duration_mean)
    videos = []
    for i, d in enumerate(durs):
        hd = rng.random() < hd_share if 0 < hd_share < 1 else hd_share == 1.0
        rate = HD_BITRATE if hd else SD_BITRATE
        name = f"{'hd' if hd else 'sd'}/v{i:05d}.mp4"
        videos.append((name, d * rate // 8, rate, chunk))
    return videos


def write(videos, out, comment=""):
    out.write("# video library written by `libception mklib`" + (f": {comment}" if comment else "") + "\n")
    out.write("lcvl 1\n")
    for name, size, rate, chunk in videos:
        out.write(f"video {name} {size} {rate} {chunk}\n")


def add_arguments(p):
    p.add_argument("preset", choices=sorted(PRESETS), help="which of the papers' libraries")
    p.add_argument("-o", "--output", default="-", help="library file to write (default stdout)")
    p.add_argument("--count", type=int, help="number of videos (default: the preset's)")
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    p.add_argument("--chunk", type=int, default=0, choices=[0, 524288, 2097152],
                   help="0 = one file per video, else chunk files of this size")
    p.add_argument("--duration-mean", type=float, default=265.0, help="mean duration in s (default 265)")


def main(args):
    if args.count is not None and args.count < 1:
        print(f"mklib: --count must be positive, not {args.count}", file=sys.stderr)
        return 2
    if not MIN_S <= args.duration_mean <= MAX_S:
        print(f"mklib: --duration-mean must be within {MIN_S}..{MAX_S} s", file=sys.stderr)
        return 2
    videos = generate(args.preset, args.count, args.seed, args.chunk, args.duration_mean)
    comment = (f"{args.preset} count={len(videos)} seed={args.seed} chunk={args.chunk} "
               f"duration-mean={args.duration_mean:g}")
    if args.output == "-":
        write(videos, sys.stdout, comment)
    else:
        try:
            with open(args.output, "w", encoding="ascii") as f:
                write(videos, f, comment)
        except OSError as e:
            print(f"mklib: \"{args.output}\": {e.strerror}", file=sys.stderr)
            return 1
    total = sum(v[1] for v in videos)
    print(f"mklib: {len(videos)} videos, {total / 1e9:.1f} GB, mean "
          f"{sum(v[1] * 8 / v[2] for v in videos) / len(videos):.1f} s", file=sys.stderr)
    return 0
