"""Calibrate hddsim on a live mount against its drive presets.

Checks, per preset (tolerances from issue 3):
  sequential  128 MiB read at the outer, middle and inner zone: rate within 5%
  random      single-page reads at 1/4, 1/2 and full stroke: access time within 5%
  lateness    two concurrent readers: p99 completion lateness below 0.5 ms
  chunking    (--chunking) whole videos in random order from unchunked, 2 MiB-
              and 0.5 MiB-chunk layouts of one library, read with cat: the
              throughputs must be ordered (chunking paper, Table 1); with
              --disk block, on ext4 (--fs xfs: xfs), each within 15% of the paper's
              94.9 / 57.3 / 34.8 MB/s
--disk block measures through the block disk (blockdisk.py): the platter
read with O_DIRECT at the chosen offsets of its loop device (eight 1 MiB
reads in flight for the sequential rates), so the block layer and the loop
device are inside every number.
Prints one line per measurement and exits 1 if any check fails.
"""
import mmap
import os
import random
import sys
import tempfile
import threading
import time
from types import SimpleNamespace

from . import blockdisk, cleanup, cmd_mklib, diskimage, hddsim

MiB = 1 << 20
PAGE = 4096


def log(msg):
    print(f"calibrate: {msg}", flush=True)


def drive_presets(path=None):
    """{preset: {key: value}} from drives.conf."""
    if path is None:
        exe = hddsim.binary()
        for cand in (os.path.join(os.path.dirname(exe), "..", "share", "libception", "drives.conf"),
                     os.path.join(os.path.dirname(exe), "drives.conf")):
            if os.path.exists(cand):
                path = cand
                break
    out, cur = {}, None
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.split("#")[0].split()
            if len(line) != 2:
                continue
            if line[0] == "drive":
                cur = out.setdefault(line[1], {})
            elif cur is not None:
                try:
                    cur[line[0]] = float(line[1])
                except ValueError:
                    cur[line[0]] = line[1]
    return out


def whole_disk_library(directory, capacity):
    """One synthetic file covering the whole platter: file offset = position."""
    path = os.path.join(directory, "disk.lcvl")
    with open(path, "w", encoding="ascii") as f:
        f.write(f"lcvl 1\nvideo disk.bin {capacity} 8 0\n")
    return path


def check(name, got, want, tol, unit, results):
    dev = got / want - 1
    ok = abs(dev) <= tol
    results.append(ok)
    log(f"{name}: {got:.2f} {unit} (preset {want:.2f}, {dev * 100:+.1f}%) {'ok' if ok else 'FAIL'}")


SEQ_WARMUP = 16 * MiB   # read before a sequential measurement starts
PAPER_TABLE1 = {0: 94.9, 2 * MiB: 57.3, MiB // 2: 34.8}   # chunking paper, MB/s, one reader
LAYOUTS = {0: "unchunked", 2 * MiB: "2 MiB chunks", MiB // 2: "0.5 MiB chunks"}


class Platter:
    """The whole platter as one file: the FUSE mount's disk.bin (buffered,
    the kernel's read-ahead in front) or the block disk's loop device
    (O_DIRECT); `stats` is hddsim's counters.  depth: sequential reads
    kept in flight (O_DIRECT has no read-ahead to do it)."""

    def __init__(self, path, stats, direct=False):
        self.path, self.stats, self.direct = path, stats, direct
        self.depth = 8 if direct else 1

    def open(self, advice):
        fd = os.open(self.path, os.O_RDONLY | (os.O_DIRECT if self.direct else 0))
        if not self.direct:
            os.posix_fadvise(fd, 0, 0, advice)
        return fd


def pread(fd, buf, n, off):
    """Read n bytes at off into buf (page-aligned, so O_DIRECT takes it)."""
    return os.preadv(fd, [memoryview(buf)[:n]], off)


def sequential(p, pos, nbytes, warmup=SEQ_WARMUP):
    """Steady-state MB/s the drive delivers to a sequential reader: bytes
    completed (stats file) between the reader passing `warmup` and its end,
    over the wall time between them, so neither the first seek nor the
    changing depth of the kernel's read-ahead distorts it."""
    lock = threading.Lock()
    st = {"next": 0, "done": 0, "t0": None, "b0": 0}

    def reader():
        fd, buf = p.open(os.POSIX_FADV_SEQUENTIAL), mmap.mmap(-1, MiB)
        try:
            while True:
                with lock:
                    off, st["next"] = st["next"], st["next"] + MiB
                if off >= nbytes or pread(fd, buf, MiB, pos + off) == 0:
                    return
                with lock:
                    st["done"] += MiB
                    if st["t0"] is None and st["done"] >= warmup:
                        st["b0"], st["t0"] = p.stats()["bytes"], time.monotonic()
        finally:
            os.close(fd)

    threads = [threading.Thread(target=reader) for _ in range(p.depth)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    b1, t1 = p.stats()["bytes"], time.monotonic()
    return (b1 - st["b0"]) / (t1 - st["t0"]) / 1e6


def random_access(p, capacity, x, pairs, rng):
    """Mean ms of a single-page read a distance x*capacity from the last one."""
    fd, buf = p.open(os.POSIX_FADV_RANDOM), mmap.mmap(-1, PAGE)
    span = int(x * capacity) - (capacity // 500 if x >= 1 else 0)
    span -= span % PAGE
    total = 0.0
    try:
        for _ in range(pairs):
            base = rng.randrange(0, (capacity - span - PAGE) // PAGE) * PAGE
            pread(fd, buf, PAGE, base)
            time.sleep(rng.random() * 0.01)  # random platter phase at the next start
            t0 = time.monotonic()
            pread(fd, buf, PAGE, base + span)
            total += time.monotonic() - t0
    finally:
        os.close(fd)
    return total / pairs * 1e3


def lateness(p, capacity, seconds, rng):
    """p99 lateness (us) with two threads reading concurrently."""
    stop = time.monotonic() + seconds
    seeds = [rng.randrange(1 << 30) for _ in range(2)]

    def reader(seed):
        r = random.Random(seed)
        fd, buf = p.open(os.POSIX_FADV_RANDOM), mmap.mmap(-1, 64 * 1024)
        try:
            while time.monotonic() < stop:
                pos = r.randrange(0, capacity // (4 * MiB) - 1) * 4 * MiB
                for k in range(8):  # a short sequential run, then a jump
                    pread(fd, buf, 64 * 1024, pos + k * 64 * 1024)
        finally:
            os.close(fd)

    threads = [threading.Thread(target=reader, args=(s,)) for s in seeds]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    st = p.stats()
    return st["lateness_p99_us"], st["lateness_p50_us"], st["reads"]


def chunking(args, directory, drive, rng):
    """Table 1 of the chunking paper: MB/s reading whole videos in random
    order; on ext4 on the block disk with --disk block.  Also what each
    file beyond the unchunked layout's costs here, against what the
    paper's rates imply it cost there."""
    out, runs = {}, {}
    order = None
    for chunk, label in LAYOUTS.items():
        videos = cmd_mklib.generate("sd", args.videos, args.seed, chunk)
        lib = os.path.join(directory, f"chunk{chunk}.lcvl")
        with open(lib, "w", encoding="ascii") as f:
            cmd_mklib.write(videos, f)
        if order is None:
            order = list(range(len(videos)))
            rng.shuffle(order)
        mnt = os.path.join(directory, f"mnt-chunk{chunk}")
        picked = [(videos[i][0], videos[i][1], videos[i][3]) for i in order]
        with blockdisk.mount(mnt, drive, lib, {"disk": args.disk, "fs": args.fs}) as m:
            total, secs = hddsim.read_videos(m.path, picked)
            st = m.stats()
        out[chunk] = rate = total / secs / 1e6
        files = sum(len(hddsim.video_files("", *v)) for v in picked)
        runs[chunk] = (secs, files, total)
        log(f"{drive} chunking {label}: {rate:.1f} MB/s ({total / 1e6:.0f} MB in {files} files, "
            f"{st['reads']} drive reads, {st.get('position_s', 0):.2f} s positioning, "
            f"utilisation {st['utilisation']:.2f})")
    secs0, files0, total = runs[0]
    for chunk in LAYOUTS:
        if chunk:
            secs, files, _ = runs[chunk]
            paper = total / 1e6 * (1 / PAPER_TABLE1[chunk] - 1 / PAPER_TABLE1[0])
            log(f"{drive} chunking {LAYOUTS[chunk]}: each extra file costs "
                f"{(secs - secs0) / (files - files0) * 1e3:.2f} ms here, "
                f"{paper / (files - files0) * 1e3:.2f} ms in the paper's rates")
    return out


def platters(args, drive, spec, directory):
    """Fresh views of the whole platter, one per phase (each starts with
    an empty page cache): yields (Platter, context manager to leave)."""
    capacity = int(spec["capacity"])
    if args.disk == "fuse":
        lib = whole_disk_library(directory, capacity)
        mnt = os.path.join(directory, f"mnt-{drive}")
        m = hddsim.Mount(mnt, drive, lib, read_ahead_kb=4096, meta_group=0)
        return Platter(os.path.join(m.path, "disk.bin"), m.stats), m
    # A bare disk: an empty sparse image the size of the drive, no extents.
    bare = SimpleNamespace(image=os.path.join(directory, f"{drive}.img"),
                           map=os.path.join(directory, f"{drive}.map"))
    with open(bare.image, "wb") as f:
        f.truncate(capacity)
    with open(bare.map, "w", encoding="ascii") as f:
        f.write(f"lcdm 1\ndisk {capacity}\n")
    d = blockdisk.BlockDisk(os.path.join(directory, f"blk-{drive}"), drive, image=bare, fs=None,
                            queue={"scheduler": "none"})
    log(f"{drive} block device {d.dev}: {d.queue}")
    return Platter(d.dev, d.stats, direct=True), d


def calibrate(args, drive, spec, directory, results):
    capacity = int(spec["capacity"])
    rng = random.Random(args.seed)
    p, m = platters(args, drive, spec, directory)
    with m:
        nbytes = args.seq_mib * MiB
        for zone, pos in (("outer", 0), ("middle", capacity // 2 // MiB * MiB),
                          ("inner", capacity - nbytes - 64 * MiB)):
            pos -= pos % PAGE
            got = sequential(p, pos, nbytes)
            check(f"{drive} sequential {zone}", got, spec[f"rate_{zone}"], 0.05, "MB/s", results)
    p, m = platters(args, drive, spec, directory)
    with m:
        for x, key in ((0.25, "access_quarter"), (0.5, "access_half"), (1.0, "access_full")):
            # Each stroke its own random sequence, so one unlucky draw of
            # rotational waits does not carry across rows.
            got = random_access(p, capacity, x, args.pairs, random.Random(args.seed * 1000 + int(x * 100)))
            check(f"{drive} random at {x:.2f} stroke", got, spec[key], 0.05, "ms", results)
    p, m = platters(args, drive, spec, directory)
    with m:
        p99, p50, reads = lateness(p, capacity, args.lateness_s, rng)
        ok = p99 < 500
        results.append(ok)
        log(f"{drive} lateness with 2 readers: p50 {p50:.0f} us, p99 {p99:.0f} us over {reads} reads "
            f"(limit 500 us) {'ok' if ok else 'FAIL'}")
    if args.chunking:
        r = chunking(args, directory, drive, rng)
        ok = r[0] > r[2 * MiB] > r[MiB // 2]
        results.append(ok)
        log(f"{drive} chunking order unchunked > 2 MiB > 0.5 MiB: {'ok' if ok else 'FAIL'} "
            f"(paper: 94.9 / 57.3 / 34.8 MB/s)")
        if args.disk == "block":
            for chunk, label in LAYOUTS.items():
                check(f"{drive} chunking {label} against the paper", r[chunk],
                      PAPER_TABLE1[chunk], 0.15, "MB/s", results)


def add_arguments(p):
    p.add_argument("--drive", action="append", help="preset to calibrate (repeatable; default all)")
    p.add_argument("--seq-mib", type=int, default=128, help="MiB per sequential zone read (default 128)")
    p.add_argument("--pairs", type=int, default=500, help="random reads per stroke (default 500)")
    p.add_argument("--lateness-s", type=float, default=10, help="seconds of two concurrent readers")
    p.add_argument("--chunking", action="store_true", help="also measure the chunking paper's Table 1")
    p.add_argument("--disk", choices=blockdisk.DISKS, default="fuse",
                   help="read the platter through hddsim's FUSE file (default) or the block disk")
    p.add_argument("--fs", choices=diskimage.FILESYSTEMS, default="ext4",
                   help="the block disk's file system for --chunking (default ext4)")
    p.add_argument("--videos", type=int, default=60, help="videos in the chunking library (default 60)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--dir", help="scratch directory (default: a temporary one)")


def main(args):
    presets = drive_presets()
    drives = args.drive or list(presets)
    for d in drives:
        if d not in presets:
            print(f"calibrate: unknown drive \"{d}\" (one of: {', '.join(presets)})", file=sys.stderr)
            return 2
    if args.seq_mib * MiB <= SEQ_WARMUP:
        print(f"calibrate: --seq-mib {args.seq_mib}: must exceed the {SEQ_WARMUP // MiB} MiB read "
              f"before timing starts", file=sys.stderr)
        return 2
    results = []
    # Cleanup: SIGTERM unwinds like Ctrl-C, so the block disk comes down.
    with cleanup.Cleanup(prog="calibrate"), \
            tempfile.TemporaryDirectory(prefix="hddsim-cal-", dir=args.dir) as directory:
        os.chmod(directory, 0o755)
        log(f"command: libception calibrate {' '.join(sys.argv[2:])}")
        log(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        for d in drives:
            calibrate(args, d, presets[d], directory, results)
    bad = results.count(False)
    log(f"{len(results) - bad}/{len(results)} checks passed")
    return 1 if bad else 0
