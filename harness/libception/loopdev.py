"""Loop devices for the block disk: attach a file read-only in direct-I/O
mode (no second copy of its pages in the host's page cache), set the
device's queue knobs, detach.

    dev = loopdev.attach("/mnt/hddsim/disk")      # "/dev/loop7"
    accepted = loopdev.set_queue(dev, {"scheduler": "bfq", "read_ahead_kb": 2048})
    loopdev.detach(dev)

The kernel may refuse or clamp a knob (a loop device takes at most its
max_hw_sectors_kb, 1280 KiB on 6.18, per request): set_queue returns what
it reads back, which is what the benchmark records.
"""
import os
import subprocess
import time

# Queue knobs under /sys/block/loopN/queue/ the benchmark may set.
QUEUE_KNOBS = ("scheduler", "read_ahead_kb", "max_sectors_kb", "nr_requests")


class LoopError(RuntimeError):
    pass


def _name(dev):
    return os.path.basename(dev)


def _sys(dev, *rel):
    return os.path.join("/sys/block", _name(dev), *rel)


def backing_file(dev):
    """The file behind a loop device, or None if it is detached."""
    try:
        with open(_sys(dev, "loop", "backing_file"), encoding="utf-8") as f:
            return f.read().strip()
    except OSError:
        return None


def direct_io(dev):
    with open(_sys(dev, "loop", "dio"), encoding="ascii") as f:
        return f.read().strip() == "1"


def attach(path, direct=True, read_only=True):
    """Attach `path` (read-only unless told) to a free loop device; its
    name.  Raises if direct I/O was asked for and the kernel did not turn
    it on."""
    cmd = ["losetup", "-f", "--show"] + (["-r"] if read_only else [])
    if direct:
        cmd.insert(2, "--direct-io=on")
    r = subprocess.run(cmd + [path], capture_output=True, text=True, check=False)
    dev = r.stdout.strip()
    if r.returncode or not dev.startswith("/dev/loop"):
        raise LoopError(f"losetup {path}: {r.stderr.strip() or 'no device'}")
    if direct and not direct_io(dev):
        detach(dev)
        raise LoopError(f"losetup {path}: {dev} refused direct I/O ({r.stderr.strip()})")
    return dev


def detach(dev, timeout=10):
    """Detach a loop device; waits while a just-unmounted file system still
    holds it."""
    deadline = time.monotonic() + timeout
    while backing_file(dev) is not None:
        r = subprocess.run(["losetup", "-d", dev], capture_output=True, text=True, check=False)
        if r.returncode == 0 or backing_file(dev) is None:
            break
        if time.monotonic() > deadline:
            raise LoopError(f"losetup -d {dev}: {r.stderr.strip()}")
        time.sleep(0.1)


def queue(dev):
    """The current values of the queue knobs (scheduler: the active one)."""
    out = {}
    for knob in QUEUE_KNOBS + ("max_hw_sectors_kb",):
        with open(_sys(dev, "queue", knob), encoding="ascii") as f:
            v = f.read().strip()
        if knob == "scheduler":
            v = next((w[1:-1] for w in v.split() if w.startswith("[")), v)
        out[knob] = v if knob == "scheduler" else int(v)
    return out


def schedulers(dev):
    with open(_sys(dev, "queue", "scheduler"), encoding="ascii") as f:
        return [w.strip("[]") for w in f.read().split()]


def set_queue(dev, knobs):
    """Write each given knob (None = leave it), scheduler first (it resets
    nr_requests); returns queue(dev), what the kernel accepted.  A value
    the kernel rejects outright raises."""
    for knob in sorted(knobs, key=lambda k: k != "scheduler"):
        value = knobs[knob]
        if value is None:
            continue
        if knob not in QUEUE_KNOBS:
            raise LoopError(f"{dev}: unknown queue knob {knob!r} (one of {', '.join(QUEUE_KNOBS)})")
        if knob == "max_sectors_kb":   # the kernel refuses more than the hardware limit
            value = min(int(value), queue(dev)["max_hw_sectors_kb"])
        try:
            with open(_sys(dev, "queue", knob), "w", encoding="ascii") as f:
                f.write(str(value))
        except OSError as e:
            extra = f" (one of {', '.join(schedulers(dev))})" if knob == "scheduler" else ""
            raise LoopError(f"{dev}: {knob} {value}: {e.strerror}{extra}") from None
    return queue(dev)


def flush(dev):
    """Drop the device's own page cache (the file system's metadata buffers)."""
    subprocess.run(["blockdev", "--flushbufs", dev], capture_output=True, check=False)
