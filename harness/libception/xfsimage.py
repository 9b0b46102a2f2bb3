"""The xfs image of a library for the block disk (diskimage.build(fs="xfs")).

xfs has no offline allocator to call as libext2fs does for ext4, so the
kernel places the files: the sparse image is loop-mounted read-write
here, every file is created and fallocate()d in library order (xfs's own
placement: directories spread over allocation groups), and FIEMAP gives
the MAP.  fallocate makes unwritten extents, which xfs answers with zeros
without reading the disk; after unmounting, xfs_db clears each extent's
unwritten flag (the inode's checksum is recomputed), so the extents are
written ones whose blocks were never written.  xfs_repair -n must find
the result clean, and a read-only mount must show no unwritten extent.
"""
import fcntl
import os
import struct
import subprocess
import tempfile

from . import cleanup, loopdev
from .hddsim import library_files

FS_IOC_FIEMAP = 0xC020660B
FIEMAP_EXTENT_LAST = 0x1
FIEMAP_EXTENT_UNWRITTEN = 0x800
_HEAD = struct.Struct("=QQIIII")           # struct fiemap
_EXTENT = struct.Struct("=QQQ2QI3I")       # struct fiemap_extent
MKFS = ["mkfs.xfs", "-q", "-f", "-b", "size=4096", "-K"]   # -K: no discard of the sparse file
BATCH = 64


def fiemap(path):
    """[(logical, physical, length, flags)] of a file's extents, in bytes."""
    out, start = [], 0
    with open(path, "rb") as f:
        while True:
            buf = bytearray(_HEAD.pack(start, (1 << 64) - 1 - start, 0, 0, BATCH, 0)
                            + bytes(_EXTENT.size * BATCH))
            fcntl.ioctl(f.fileno(), FS_IOC_FIEMAP, buf)
            n = _HEAD.unpack_from(buf)[3]
            for i in range(n):
                e = _EXTENT.unpack_from(buf, _HEAD.size + i * _EXTENT.size)
                out.append((e[0], e[1], e[2], e[5]))
            if not n or out[-1][3] & FIEMAP_EXTENT_LAST:
                return out
            start = out[-1][0] + out[-1][2]


def _populate(root, library):
    """Create and allocate the files under a mounted root; returns
    [(inode, [(disk offset, length, video, video offset)])]."""
    made = []
    for path, size, video, voff in library_files(library):
        full = os.path.join(root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        fd = os.open(full, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        try:
            if size:
                os.posix_fallocate(fd, 0, -(-size // 4096) * 4096)
            os.ftruncate(fd, size)
            ino = os.fstat(fd).st_ino
        finally:
            os.close(fd)
        made.append((ino, [(phys, n, video, voff + logical)
                           for logical, phys, n, _ in fiemap(full)]))
    return made


def _mounted(image, read_only, body):
    """body(mount point) with the image mounted; named in a state file, so
    `libception cleanup` removes what a killed build left."""
    record = cleanup.StackRecord(f"xfs image {image}")
    where = tempfile.mkdtemp(prefix="xfsimage-")
    try:
        record.add("loop", os.path.realpath(image))
        dev = loopdev.attach(image, direct=False, read_only=read_only)
        record.add("mount", where)
        opts = "ro,norecovery,nouuid" if read_only else "nouuid"
        subprocess.run(["mount", "-t", "xfs", "-o", opts, dev, where], check=True,
                       capture_output=True)
        return body(where)
    finally:
        for piece in reversed(record.data["pieces"]):
            cleanup.remove_piece(piece)
        record.close()
        os.rmdir(where)


def build_into(image, library, run):
    """Make the xfs `image` (an empty sparse file) hold `library`; returns
    the MAP's extents.  `run(cmd)` runs a command, raising on failure."""
    run(MKFS + [image])
    made = _mounted(image, False, lambda root: _populate(root, library))
    script = []
    for ino, extents in made:
        script.append(f"inode {ino}")
        script += [f"write u3.bmx[{j}].extentflag 0" for j in range(len(extents))]
    r = subprocess.run(["xfs_db", "-x", image], input="\n".join(script) + "\n",
                       capture_output=True, text=True, check=False)
    if r.returncode or "rror" in r.stderr:
        raise RuntimeError(f"xfs_db: {r.stderr.strip().splitlines()[-1:]}")
    run(["xfs_repair", "-n", image])

    def unwritten(root):
        return [p for p, *_ in library_files(library)
                if any(f & FIEMAP_EXTENT_UNWRITTEN for *_, f in fiemap(os.path.join(root, p)))]
    left = _mounted(image, True, unwritten)
    if left:
        raise RuntimeError(f"xfs: {len(left)} files kept unwritten extents ({left[0]}, ...)")
    return sorted(e for _, extents in made for e in extents)
