"""Measure the storage device under PATH and store its profile for receptiond.

Runs receptiond-profile (sequential rate by position, switch cost between
distant positions, serialized vs concurrent reads; cold reads with O_DIRECT
or drop-behind), then stores the result as JSON per device, named by the
device's whole-disk MAJ:MIN (for FUSE and other anonymous devices: the
mount's own st_dev), in the profile directory where receptiond's
competitive and adaptive policies look for it.
"""
import datetime
import json
import os
import shutil
import subprocess
import sys

from . import sizes

PROG = "libception profile"
TOOL = "receptiond-profile"
PROFILE_ENV = "LIBCEPTION_PROFILES"


def profile_dir():
    """Where profiles live; receptiond (profile_load.c) uses the same rule."""
    if os.environ.get(PROFILE_ENV):
        return os.environ[PROFILE_ENV]
    if os.geteuid() == 0:
        return "/var/lib/libception/profiles"
    state = os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state")
    return os.path.join(state, "libception", "profiles")


def find_tool(name=TOOL):
    """The binary next to this install (PREFIX/bin), the source tree's
    build/bin, or PATH."""
    # Lexically from where we were imported (the harness may be a symlink
    # into the source tree), then physically from the source tree.
    here = os.path.dirname(os.path.abspath(__file__))
    real = os.path.dirname(os.path.realpath(__file__))
    candidates = [
        os.path.normpath(os.path.join(here, "..", "..", "..", "..", "bin", name)),
        os.path.normpath(os.path.join(real, "..", "..", "build", "bin", name)),
    ]
    for c in candidates:
        if os.access(c, os.X_OK):
            return c
    return shutil.which(name)


def _sysfs_dev(major, minor):
    path = f"/sys/dev/block/{major}:{minor}"
    return os.path.realpath(path) if os.path.exists(path) else None


def device_of(path):
    """(key, info) for the device holding path.  A partition maps to its
    whole disk, as receptiond maps it (device.c)."""
    st = os.stat(path)
    major, minor = os.major(st.st_dev), os.minor(st.st_dev)
    info = {"fs_dev": f"{major}:{minor}", "block": False, "rotational": None}
    sysdir = _sysfs_dev(major, minor)
    if sysdir:
        info["block"] = True
        if os.path.exists(os.path.join(sysdir, "partition")):
            sysdir = os.path.dirname(sysdir)
            with open(os.path.join(sysdir, "dev"), encoding="ascii") as f:
                major, minor = (int(x) for x in f.read().strip().split(":"))
        info["name"] = os.path.basename(sysdir)
        try:
            with open(os.path.join(sysdir, "queue", "rotational"), encoding="ascii") as f:
                info["rotational"] = int(f.read().strip())
        except OSError:
            pass
    key = f"{major}:{minor}"
    info["key"] = key
    mount = _mount_of(st.st_dev)
    if mount:
        info["mount"], info["fstype"], info["source"] = mount
    info.setdefault("name", f"{info.get('fstype', 'anon')}-{key}")
    return key, info


def _mount_of(st_dev):
    want = f"{os.major(st_dev)}:{os.minor(st_dev)}"
    try:
        with open("/proc/self/mountinfo", encoding="utf-8") as f:
            for line in f:
                parts = line.split()
                if parts[2] == want:
                    sep = parts.index("-")
                    return parts[4], parts[sep + 1], parts[sep + 2]
    except OSError:
        pass
    return None


def _make_scratch(directory, size):
    """A cold scratch file of size bytes (written, synced, dropped from the
    page cache) for directories without enough data of their own."""
    path = os.path.join(directory, f"libception-profile-{os.getpid()}.tmp")
    block = os.urandom(1 << 20)
    with open(path, "wb") as f:
        left = size
        while left > 0:
            n = min(left, len(block))
            f.write(block[:n])
            left -= n
        f.flush()
        os.fsync(f.fileno())
        os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
    return path


def summary(profile):
    mib = 1 << 20
    lines = [f"device {profile['device']['name']} ({profile['device']['key']}), "
             f"{profile['files']} files, {profile['bytes'] / mib:.0f} MiB, {profile['method']}"]
    rates = ", ".join(f"{s['position']:.2f}: {s['rate'] / 1e6:.1f}" for s in profile["sequential"])
    lines.append(f"sequential MB/s by position: {rates}")
    sw = profile["switch"]
    lines.append(f"switch cost {profile['switch_s'] * 1e3:.2f} ms "
                 f"(random 4 KiB reads: mean {sw['mean_s'] * 1e3:.2f} ms, "
                 f"median {sw['median_s'] * 1e3:.2f} ms, {sw['reads']} reads)")
    lines.append(f"competitive size {profile['competitive_size'] / mib:.2f} MiB")
    par = ", ".join(f"{r['threads']}: {r['ratio']:.2f}" for r in profile["parallel"]["results"])
    lines.append(f"concurrent/serialized throughput by threads: {par}")
    lines.append(f"concurrency {profile['concurrency']} ({profile['concurrency_reason']})")
    return [f"{PROG}: {line}" for line in lines]


def add_arguments(p):
    p.add_argument("path", metavar="PATH", help="a file or directory on the device to measure")
    p.add_argument("--budget", type=float, default=120,
                   help="seconds the measurement may take (default 120)")
    p.add_argument("--seed", type=int, default=1, help="seed for the random positions")
    p.add_argument("--max-threads", type=int, default=8,
                   help="most concurrent reads tried (default 8)")
    p.add_argument("--scratch", metavar="SIZE",
                   help="write a scratch file of SIZE in PATH (a directory) to measure, "
                        "and remove it after")
    p.add_argument("--store", metavar="DIR",
                   help=f"profile directory (default ${PROFILE_ENV}, or "
                        "/var/lib/libception/profiles as root)")
    p.add_argument("--no-store", action="store_true", help="only print the profile")
    p.add_argument("--json", action="store_true", help="print the profile as JSON")


def main(args):
    tool = find_tool()
    if not tool:
        print(f"{PROG}: {TOOL} not found (run make)", file=sys.stderr)
        return 1
    if not os.path.exists(args.path):
        print(f"{PROG}: \"{args.path}\": no such file or directory", file=sys.stderr)
        return 1
    scratch = None
    try:
        if args.scratch:
            if not os.path.isdir(args.path):
                print(f"{PROG}: --scratch needs PATH to be a directory", file=sys.stderr)
                return 2
            try:
                scratch = _make_scratch(args.path, sizes.parse(args.scratch))
            except ValueError as e:
                print(f"{PROG}: --scratch {e}", file=sys.stderr)
                return 2
        key, info = device_of(args.path)
        cmd = [tool, "--budget", str(args.budget), "--seed", str(args.seed),
               "--max-threads", str(args.max_threads), args.path]
        run = subprocess.run(cmd, stdout=subprocess.PIPE, check=False)
        if run.returncode:
            return run.returncode
        profile = json.loads(run.stdout)
    finally:
        if scratch:
            os.unlink(scratch)
    profile["device"] = info
    profile["created"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    profile["command"] = " ".join(cmd)
    if not args.no_store:
        directory = args.store or profile_dir()
        os.makedirs(directory, exist_ok=True)
        dest = os.path.join(directory, f"{key}.json")
        tmp = dest + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(profile, f, indent=1)
            f.write("\n")
        os.replace(tmp, dest)
        profile["stored"] = dest
    if args.json:
        print(json.dumps(profile, indent=1))
    else:
        for line in summary(profile):
            print(line)
        if "stored" in profile:
            print(f"{PROG}: stored {profile['stored']}")
    return 0
