"""Disk images of the block disk: a video library in a real ext4 (or xfs,
xfsimage.py) whose video blocks are never written (docs/hddsim.md,
"BLOCK DISK").

    img = diskimage.build("sd.lcvl")        # cached: the second call is instant
    img.image, img.map                      # for `hddsim MOUNT --disk IMAGE --disk-map MAP`

mkfs.ext4 makes a sparse image; hddsim-mkdisk (hddsim/mkdisk.c, libext2fs)
creates the directories and files with written extents in library order
and writes the MAP of where each video's bytes lie; e2fsck -fyD indexes
the directories as the kernel would have, and e2fsck -fn checks the result.
The image holds only the file system's metadata (a few MB per 10,000
files); hddsim synthesizes the videos' bytes from the MAP.

Cache: CACHE_DIR/KEY/{disk.img,disk.map,info.json}, KEY a hash of the
library file's content, the file system and its mkfs options, so a
changed library or option builds a new image and an unchanged one is
reused.  CACHE_DIR is $LIBCEPTION_DISK_CACHE, else /var/cache/libception/disks;
remove a KEY directory (or all) to reclaim the space.
"""
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import time

from . import hddsim, xfsimage

BLOCK = 4096
# Bump when the way images are made changes, so old cache entries are not reused.
IMAGE_VERSION = 1
FILESYSTEMS = ("ext4", "xfs")
# No reserved blocks; nothing the image does not need is written (lazy
# inode tables and journal, no discard of the sparse file).
MKFS = {"ext4": ["mkfs.ext4", "-q", "-F", "-b", str(BLOCK), "-m", "0",
                 "-E", "lazy_itable_init=1,lazy_journal_init=1,nodiscard"],
        "xfs": xfsimage.MKFS}


class DiskImageError(RuntimeError):
    pass


def cache_dir():
    return os.environ.get("LIBCEPTION_DISK_CACHE") or "/var/cache/libception/disks"


class DiskImage:
    """A built image: .image, .map, .info (what built it and how long it took)."""

    def __init__(self, directory):
        self.dir = directory
        self.image = os.path.join(directory, "disk.img")
        self.map = os.path.join(directory, "disk.map")
        with open(os.path.join(directory, "info.json"), encoding="utf-8") as f:
            self.info = json.load(f)

    def extents(self):
        """[(disk_offset, length, video, video_offset)] of the MAP."""
        return read_map(self.map)[1]


def read_map(path):
    """(disk bytes, [(disk_offset, length, video, video_offset)]) of a MAP."""
    disk, out = None, []
    with open(path, encoding="ascii") as f:
        if f.readline().split() != ["lcdm", "1"]:
            raise DiskImageError(f"{path}: not an lcdm 1 map")
        for line in f:
            p = line.split()
            if p[0] == "disk":
                disk = int(p[1])
            elif p[0] == "extent":
                out.append((int(p[1]), int(p[2]), p[3], int(p[4])))
    return disk, out


def _library_files(path):
    """(files, directories, data blocks) the library needs."""
    files, blocks, dirs = 0, 0, set()
    for name, size, _, _ in hddsim.library_files(path):
        parts = name.split("/")
        dirs.update("/".join(parts[:i]) for i in range(1, len(parts)))
        files += 1
        blocks += -(-size // BLOCK)
    return files, len(dirs), blocks


def _size(files, dirs, blocks):
    """Image bytes: the data, ~2% for bitmaps, group descriptors and
    extent blocks, the inode tables, and room for the journal (1 GiB
    above 128 GiB), in whole MiB."""
    need = blocks * BLOCK * 1.02 + (files + dirs) * 512 + (1 << 30) + (64 << 20)
    return int(-(-need // (1 << 20))) << 20


def key(library, fs="ext4"):
    h = hashlib.sha256()
    with open(library, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    opts = {"library": h.hexdigest(), "fs": fs, "mkfs": MKFS[fs], "version": IMAGE_VERSION}
    return hashlib.sha256(json.dumps(opts, sort_keys=True).encode()).hexdigest()[:20]


def _run(cmd, ok=(0,)):
    r = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if r.returncode not in ok:
        msg = (r.stderr.strip() or r.stdout.strip()).splitlines()
        raise DiskImageError(f"{os.path.basename(cmd[0])}: {msg[-1] if msg else f'exit {r.returncode}'}")
    return r


def mkdisk_binary():
    return os.path.join(os.path.dirname(hddsim.binary()), "hddsim-mkdisk")


def _write_map(path, disk, extents):
    with open(path, "w", encoding="ascii") as f:
        f.write(f"lcdm 1\ndisk {disk}\n")
        for d, n, video, voff in extents:
            f.write(f"extent {d} {n} {video} {voff}\n")


def _build_into(directory, library, fs):
    files, dirs, blocks = _library_files(library)
    image = os.path.join(directory, "disk.img")
    t0 = time.monotonic()
    with open(image, "wb") as f:
        f.truncate(_size(files, dirs, blocks))
    if fs == "xfs":
        try:
            extents = xfsimage.build_into(image, library, _run)
        except (RuntimeError, subprocess.CalledProcessError) as e:
            raise DiskImageError(str(e)) from None
        _write_map(os.path.join(directory, "disk.map"), os.path.getsize(image), extents)
    else:
        _run(MKFS[fs] + ["-N", str(files + dirs + 1024), image])
        _run([mkdisk_binary(), image, library, os.path.join(directory, "disk.map")])
        _run(["e2fsck", "-fyD", image], ok=(0, 1))   # 1: directories were indexed
        _run(["e2fsck", "-fn", image])
    info = {"library": os.path.abspath(library), "fs": fs, "mkfs": MKFS[fs],
            "files": files, "directories": dirs, "data_bytes": blocks * BLOCK,
            "image_bytes": os.path.getsize(image),
            "allocated_bytes": os.stat(image).st_blocks * 512,
            "build_s": round(time.monotonic() - t0, 2), "version": IMAGE_VERSION}
    with open(os.path.join(directory, "info.json"), "w", encoding="utf-8") as f:
        json.dump(info, f, indent=1)


def build(library, fs="ext4", cache=None, log=None):
    """The image of `library` on `fs`, from the cache or built into it."""
    if fs not in FILESYSTEMS:
        raise DiskImageError(f"file system {fs!r}: one of {', '.join(FILESYSTEMS)}")
    cache = cache or cache_dir()
    os.makedirs(cache, exist_ok=True)
    k = key(library, fs)
    final = os.path.join(cache, k)
    # One builder per key; a second caller waits and then reuses its image.
    with open(os.path.join(cache, f"{k}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.exists(os.path.join(final, "info.json")):
            return DiskImage(final)
        tmp = final + ".building"
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
        if log:
            log(f"building the {fs} image of {library} in {final}")
        try:
            _build_into(tmp, library, fs)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        os.rename(tmp, final)
    return DiskImage(final)
