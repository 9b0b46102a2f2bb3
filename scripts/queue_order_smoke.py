#!/usr/bin/env python3
"""Smoke measurement of receptiond's queue order (docs/receptiond.md QUEUE
ORDER): scattered reads on ext4 over a direct-I/O loop device over a file
hddsim serves, with --order fifo, position, and position with two windows
in flight.  Not a headline: one short run per configuration on whatever
machine this is; the load average is printed beside the numbers.

    sudo python3 scripts/queue_order_smoke.py [--requests 400] [--clients 16]

Per configuration: hddsim's positioning time per read (window) and
the transfer share (from its trace), the daemon's head travel per read and
its demand queue wait p50/p99/max.  The image is sparse: 16 files of
16 MiB, each followed by a 7 GiB allocated but unwritten filler, so the
files lie 7 GiB apart over the 128 GiB file system.
"""
import argparse
import contextlib
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "harness"))
from libception import daemon as lcd  # noqa: E402
from libception import hddsim, pagecache  # noqa: E402

MiB = 1 << 20
FILES, FILE_SIZE = 16, 16 * MiB


def run(*cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip()


@contextlib.contextmanager
def loop_mount(image, where, loop_flags, mount_opts):
    dev = run("losetup", "--find", "--show", *loop_flags, image)
    try:
        os.makedirs(where, exist_ok=True)
        run("mount", "-o", mount_opts, dev, where)
        try:
            yield dev
        finally:
            subprocess.run(["umount", where], check=False)
    finally:
        subprocess.run(["losetup", "-d", dev], check=False)


def build_image(image, work):
    with open(image, "wb") as f:
        f.truncate(128 << 30)
    run("mkfs.ext4", "-q", "-F", "-O", "^has_journal", "-E", "lazy_itable_init=1", image)
    with loop_mount(image, os.path.join(work, "build"), [], "noinit_itable"):
        for i in range(FILES):
            d = os.path.join(work, "build", f"d{i:02}")
            os.mkdir(d)
            with open(os.path.join(d, "video"), "wb") as f:
                f.write(os.urandom(FILE_SIZE))
                f.flush()
                os.fsync(f.fileno())
            with open(os.path.join(d, "filler"), "wb") as f:
                os.posix_fallocate(f.fileno(), 0, 7 << 30)   # unwritten: the image stays sparse


def trace_between(path, t0, t1):
    pos = xfer = n = 0
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                continue
            c = line.split()
            if t0 <= float(c[0]) <= t1:
                pos += float(c[5])
                xfer += float(c[6])
                n += 1
    return n, pos, xfer


def client(sock_path, files, k, seed, window, errors):
    rng = random.Random(seed)
    try:
        with lcd.connect(sock_path, timeout=120) as s:
            fds = [os.open(p, os.O_RDONLY) for p in files]
            try:
                for i in range(k):
                    off = rng.randrange(FILE_SIZE // window) * window
                    r = lcd.ensure(s, rng.choice(fds), off, window, req_id=i + 1,
                                   flags=lcd.F_NO_PREFETCH)
                    if r["status_name"] != "ok":
                        errors.append(r["status_name"])
            finally:
                for fd in fds:
                    os.close(fd)
    except OSError as e:
        errors.append(str(e))


def measure(args, mount, files, trace, label, extra):
    for p in files:
        pagecache.evict(p)
    sock_dir = tempfile.mkdtemp(prefix="lc-qo-")
    sock = os.path.join(sock_dir, "rd.sock")
    proc = subprocess.Popen([os.path.join(ROOT, "build", "bin", "receptiond"), "--foreground",
                             "--socket", sock, *extra], stderr=subprocess.DEVNULL)
    try:
        while not lcd.is_listening(sock):
            time.sleep(0.01)
        load0 = os.getloadavg()[0]
        t0 = mount.stats()["uptime_s"]
        start = time.monotonic()
        errors = []
        per = args.requests // args.clients
        threads = [threading.Thread(target=client, args=(sock, files, per, 1000 + c, args.window,
                                                          errors)) for c in range(args.clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.monotonic() - start
        t1 = mount.stats()["uptime_s"]
        st = next(d for d in lcd.stats(sock)["devices"] if d["name"].startswith("loop"))
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(sock_dir, ignore_errors=True)
    return dict(label=label, elapsed=elapsed, t0=t0, t1=t1, order=st["order"], errors=errors,
                load=(load0, os.getloadavg()[0]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=400)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--window", type=int, default=256 << 10, help="bytes per request")
    ap.add_argument("--drive", default="wd-red")
    ap.add_argument("--work", help="work directory (default: a new one in /tmp, removed after)")
    args = ap.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="qo-smoke-")
    os.chmod(work, 0o755)
    lib, image = os.path.join(work, "lib"), os.path.join(work, "lib", "disk.img")
    os.makedirs(lib, exist_ok=True)
    trace = os.path.join(work, "trace")
    try:
        build_image(image, work)
        mount = hddsim.Mount(os.path.join(work, "hd"), drive=args.drive, library=lib, trace=trace,
                             meta_group=0)
        results = []
        try:
            with loop_mount(os.path.join(mount.path, "disk.img"), os.path.join(work, "mnt"),
                            ["--read-only", "--direct-io=on"], "ro,noload"):
                files = [os.path.join(work, "mnt", f"d{i:02}", "video") for i in range(FILES)]
                for label, extra in (("fifo", ["--order", "fifo"]), ("position", []),
                                     ("position inflight 2", ["--inflight", "2"])):
                    results.append(measure(args, mount, files, trace, label, extra))
        finally:
            mount.unmount()
        print(f"{args.requests} reads of {args.window >> 10} KiB from {args.clients} clients, "
              f"{FILES} files 7 GiB apart on ext4 on hddsim {args.drive}")
        print(f"{'order':<20} {'s':>6} {'cmds':>5} {'pos ms/read':>11} {'xfer share':>10} "
              f"{'travel/read':>11} {'demand wait p50/p99/max ms':>27} {'misses':>6} {'load':>10}")
        for r in results:
            n, pos, xfer = trace_between(trace, r["t0"], r["t1"])
            o = r["order"]
            w = o["wait_demand_us"]
            travel = (f"{o['head_travel_bytes'] / o['placed_reads'] / (1 << 30):.2f}G"
                      if o["placed_reads"] else "-")
            pos_ms = pos / args.requests / 1e3
            print(f"{r['label']:<20} {r['elapsed']:>6.1f} {n:>5} {pos_ms:>11.2f} "
                  f"{xfer / (pos + xfer) if pos + xfer else 0:>10.2f} {travel:>11} "
                  f"{w['p50'] / 1e3:>8.0f}/{w['p99'] / 1e3:.0f}/{w['max'] / 1e3:.0f}".ljust(99)
                  + f" {o['deadline_misses']:>6} {r['load'][0]:>4.1f}-{r['load'][1]:.1f}"
                  + (f"  errors {r['errors'][:3]}" if r["errors"] else ""))
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
