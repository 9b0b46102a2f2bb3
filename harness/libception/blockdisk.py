"""The block disk: a real ext4 (or xfs) on a loop device on hddsim's emulated
platter (docs/hddsim.md, "Block disk").

    hddsim WHERE/hddsim --disk IMAGE --disk-map MAP   (WHERE/hddsim/disk = the platter)
      -> losetup -r --direct-io=on /dev/loopN          (queue knobs set here)
        -> mount -t ext4 -o ro,noload /dev/loopN WHERE/fs

    with BlockDisk("/tmp/x", "wd-red", "sd.lcvl", queue={"scheduler": "bfq"}) as d:
        ...read the videos under d.path...; d.stats(); d.queue (what the kernel took)

The queue starts as a SATA hard disk's on Debian (SATA_QUEUE); `queue`
changes knobs of it.

It has hddsim.Mount's surface (path, stats, untimed, drop_cache,
read_ahead_kb, unmount), so the benchmark uses either (mount(), below).
Teardown is the reverse order, on exit and on an exception; each piece
is named in a cleanup.StackRecord first, so `libception cleanup` removes
what a killed owner left.
"""
import os
import subprocess

from . import cleanup, diskimage, hddsim, loopdev, pagecache

# Settings of the video scenarios that choose the disk (`bench --set KEY=VALUE`):
# the block disk unless a run asks for FUSE.
DISK_SETTINGS = {"disk": "block", "fs": "ext4", "scheduler": None, "read_ahead_kb": None,
                 "max_sectors_kb": None, "nr_requests": None}
DISKS = ("fuse", "block")
# What a configuration without a "disk" key ran on: results from before the
# block disk existed, and callers that mount a library directly.
UNSAID = "fuse"
# The queue a SATA hard disk gets on Debian, which the block disk starts
# from before a scenario's knobs: a loop device starts elsewhere (no
# scheduler; read_ahead_kb twice the backing file's block size, 2560 KiB
# over hddsim) and keeps whatever its last user set (an end-to-end run's
# vanilla rows got bfq and 2560 KiB that way).
SATA_QUEUE = {"scheduler": "mq-deadline", "read_ahead_kb": 128, "max_sectors_kb": 1280}
# Read-only, no journal replay; xfs: two stacks of one image may be up at
# once, and xfs refuses a second mount of one UUID without nouuid.
MOUNT_OPTIONS = {"ext4": "ro,noload", "xfs": "ro,norecovery,nouuid"}


class BlockDisk:
    def __init__(self, where, drive="wd-red", library=None, fs="ext4", queue=None,
                 trace=None, image=None, direct=True, log=None, **hddsim_opts):
        self.where = os.path.realpath(where)
        self.path = os.path.join(self.where, "fs")
        self.fs = fs
        # fs=None: no file system, the loop device alone (calibration reads
        # the platter through it); `image` then names a bare disk (image, map).
        self.image = image or diskimage.build(library, fs, log=log)
        self.hddsim = None
        self.dev = None
        self.queue = {}
        self.record = cleanup.StackRecord(f"block disk {self.where}")
        try:
            self._start(drive, trace, queue or {}, direct, hddsim_opts)
        except BaseException:
            self.unmount()
            raise

    def _start(self, drive, trace, queue, direct, opts):
        hpath = os.path.join(self.where, "hddsim")
        self.record.add("hddsim", hpath)
        self.hddsim = hddsim.Mount(hpath, drive, disk=self.image.image,
                                   disk_map=self.image.map, trace=trace, **opts)
        self.record.note(pid=self.hddsim.pid, pid_start=cleanup.start_time(self.hddsim.pid))
        backing = os.path.join(self.hddsim.path, "disk")
        self.record.add("loop", backing)
        self.dev = loopdev.attach(backing, direct)
        # Through "none": the scheduler named next starts afresh, with its
        # own nr_requests (writing the name already in use changes nothing).
        loopdev.set_queue(self.dev, {"scheduler": "none"})
        self.queue = loopdev.set_queue(
            self.dev, {**SATA_QUEUE, **{k: v for k, v in queue.items() if v is not None}})
        if self.fs is None:
            return
        self.record.add("mount", self.path)
        os.makedirs(self.path, exist_ok=True)
        r = subprocess.run(["mount", "-t", self.fs, "-o", MOUNT_OPTIONS[self.fs], self.dev, self.path],
                           capture_output=True, text=True, check=False)
        if r.returncode:
            raise hddsim.HddsimError(f"mount {self.dev} on {self.path}: {r.stderr.strip()}")

    # --- hddsim.Mount's surface ----------------------------------------------
    @property
    def pid(self):
        return self.hddsim.pid

    @property
    def proc(self):
        """hddsim's process (the benchmark watches that it stays up)."""
        return self.hddsim.proc if self.hddsim else None

    @property
    def read_ahead_kb(self):
        return loopdev.queue(self.dev)["read_ahead_kb"]

    @read_ahead_kb.setter
    def read_ahead_kb(self, kb):
        self.queue = loopdev.set_queue(self.dev, {"read_ahead_kb": kb})

    def stats(self):
        return self.hddsim.stats()

    def untimed(self, timeout=10):
        return self.hddsim.untimed(timeout)

    def drop_cache(self, paths=None):
        """Evict the files' pages and the device's metadata buffers; the
        kernel's inode and dentry caches stay (only a new stack empties them)."""
        if paths is None:
            pagecache.evict_tree(self.path)
        for p in paths or ():
            pagecache.evict(p)
        loopdev.flush(self.dev)

    def unmount(self):
        """File system, loop device, hddsim: the reverse of the setup.  Every
        piece is tried; the first failure is raised after the rest, and the
        state file then stays for `libception cleanup`."""
        failed = None
        for piece in reversed(self.record.data["pieces"]):
            try:
                if piece["kind"] == "hddsim" and self.hddsim is not None:
                    self.hddsim.unmount()
                else:
                    cleanup.remove_piece(piece)
            except Exception as e:  # keep tearing the rest down
                failed = failed or e
        self.hddsim = None
        if failed:
            raise failed
        self.record.data["pieces"].clear()
        self.record.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.unmount()
        return False


def check_settings(s):
    """The disk settings of a scenario (DISK_SETTINGS' keys), or ValueError."""
    if s.get("disk", UNSAID) not in DISKS:
        raise ValueError(f"disk {s['disk']!r}: one of {', '.join(DISKS)}")
    if s.get("fs", "ext4") not in diskimage.FILESYSTEMS:
        raise ValueError(f"fs {s['fs']!r}: one of {', '.join(diskimage.FILESYSTEMS)}")
    if s.get("scheduler") is not None and not isinstance(s["scheduler"], str):
        raise ValueError(f"scheduler {s['scheduler']!r}: a name (none, mq-deadline, kyber, bfq)")
    for k in loopdev.QUEUE_KNOBS[1:]:
        v = s.get(k)
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v <= 0):
            raise ValueError(f"{k} {v!r}: a positive whole number")
    block_only = [k for k in ("scheduler", "max_sectors_kb", "nr_requests") if s.get(k) is not None]
    if s.get("disk", UNSAID) == "fuse" and block_only:
        raise ValueError(f"{', '.join(block_only)}: only with disk=block (FUSE has no block queue)")


def disk_config(s):
    """The disk keys a configuration records: the disk, and the knobs set."""
    out = {"disk": s.get("disk", UNSAID)}
    if out["disk"] == "block":
        out["fs"] = s.get("fs", "ext4")
    for k in loopdev.QUEUE_KNOBS:
        if s.get(k) is not None:
            out[k] = s[k]
    return out


def mount(where, drive, library, cfg, **opts):
    """The disk a configuration asks for: hddsim's FUSE mount of the
    library, or with cfg["disk"] == "block" the block disk, its queue knobs
    set from cfg (read_ahead_kb is set by the caller on either)."""
    if cfg.get("disk", UNSAID) != "block":
        return hddsim.Mount(where, drive, library, **opts)
    queue = {k: cfg.get(k) for k in ("scheduler", "max_sectors_kb", "nr_requests")}
    return BlockDisk(where, drive, library, fs=cfg.get("fs", "ext4"), queue=queue, **opts)
