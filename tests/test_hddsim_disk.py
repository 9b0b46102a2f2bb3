"""hddsim's disk mode: MOUNT/disk is a whole disk whose bytes are the
image's, the map's synthesized video extents and zeros in the holes, read
through the drive model; a read-only direct-I/O loop device over it
returns the same bytes, and ext4 on it reads a video's bytes where
filefrag says they lie.  Built by hand here (no mkdisk), so every byte's
source is known."""
import contextlib
import mmap
import os
import re
import select
import signal
import subprocess
import time

import pytest

from conftest import bin_path
from fixtures_hddsim import content_bytes
from libception.hddsim import is_mounted

MIB = 1 << 20
DISK = 64 * MIB
IMAGE_BYTES = 40 * MIB  # the image ends before the disk: the rest reads as zeros
# (disk offset, length, video, video offset), listed out of order.  The
# chunked video's chunk 2 of 0.5 MiB lies at video offset 2 * 524288.
EXTENTS = [
    (30 * MIB, MIB, "sd/v00001.mp4", 0),
    (8 * MIB, 3 * MIB, "sd/v00000.mp4", 0),
    (2 * MIB + 12288, 524288, "sd/v00001.mp4", 2 * 524288),
    (45 * MIB, MIB, "hd/v00002.mp4", 7 * 4096),  # past the image's end
]
# Bytes the "file system" wrote; the one at 8 MiB is hidden by a video extent.
IMAGE_WRITES = {0: 4096, 5 * MIB + 100: 1000, 8 * MIB: 4096, 39 * MIB + 4096: 8192}


@pytest.fixture
def disk_files(scratch):
    img, mapf = scratch / "disk.img", scratch / "disk.map"
    want = bytearray(DISK)
    with open(img, "wb") as f:
        f.truncate(IMAGE_BYTES)
        for off, n in IMAGE_WRITES.items():
            data = os.urandom(n)
            f.seek(off)
            f.write(data)
            want[off:off + n] = data
    lines = ["# written by hand", "lcdm 1", f"disk {DISK}", ""]
    for off, n, video, voff in EXTENTS:
        lines.append(f"extent {off} {n} {video} {voff}")
        want[off:off + n] = content_bytes(video, voff, n)
    mapf.write_text("\n".join(lines) + "\n")
    return img, mapf, bytes(want)


def start_hddsim(mnt, *args):
    """hddsim in disk mode, up once its banner is printed and the mount is
    in mountinfo; returns (process, banner)."""
    os.makedirs(mnt, exist_ok=True)
    proc = subprocess.Popen([bin_path("hddsim"), str(mnt), *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 30
    if not select.select([proc.stdout], [], [], 30)[0]:
        proc.kill()
    banner = proc.stdout.readline()
    while "mounted" in banner and not is_mounted(mnt) and time.monotonic() < deadline:
        time.sleep(0.02)
    return proc, banner


def stop_hddsim(proc, mnt):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            pass
    if is_mounted(mnt):
        subprocess.run(["fusermount3", "-uz", str(mnt)], check=False)
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    proc.stdout.close()
    proc.stderr.close()


def needs_root_and_fuse():
    if not os.path.exists("/dev/fuse") or os.geteuid() != 0:
        pytest.skip("needs /dev/fuse and root (loop devices)")


@contextlib.contextmanager
def loop_device(path):
    """A read-only direct-I/O loop device over path, detached on exit."""
    loop = subprocess.run(["losetup", "-f", "--show", "-r", "--direct-io=on", str(path)],
                          capture_output=True, text=True, check=True).stdout.strip()
    try:
        yield loop
    finally:
        subprocess.run(["losetup", "-d", loop], check=False)


@contextlib.contextmanager
def ext4_on_disk(scratch, img, mapf, trace=None):
    """hddsim -> loop device -> ext4 mounted read-only; torn down in
    reverse order whatever happens.  Yields the file system's root."""
    mnt, fs = scratch / "mnt", scratch / "fs"
    fs.mkdir(exist_ok=True)
    proc, banner = start_hddsim(mnt, "--disk", img, "--disk-map", mapf,
                                *(["--trace", trace] if trace else []))
    try:
        assert "mounted" in banner, proc.stderr.read()
        with loop_device(mnt / "disk") as loop:
            subprocess.run(["mount", "-t", "ext4", "-o", "ro,noload", loop, str(fs)], check=True)
            try:
                yield fs
            finally:
                subprocess.run(["umount", str(fs)], check=False)
    finally:
        stop_hddsim(proc, mnt)


def filefrag(path):
    """[(logical byte, physical byte, bytes)] of a file's extents."""
    out = subprocess.run(["filefrag", "-v", "-b4096", str(path)], capture_output=True, text=True,
                         check=True).stdout
    ext = re.findall(r"^\s*\d+:\s*(\d+)\.\.\s*\d+:\s*(\d+)\.\.\s*\d+:\s*(\d+):", out, re.M)
    return [(int(lo) * 4096, int(ph) * 4096, int(n) * 4096) for lo, ph, n in ext]


def stats(mnt):
    with open(os.path.join(mnt, ".hddsim", "stats"), encoding="ascii") as f:
        return {k: float(v) if "." in v else int(v) if v.isdigit() else v
                for k, _, v in (line.strip().partition(" ") for line in f)}


def read_all(path, flags=0, block=MIB):
    """Every byte of path; with O_DIRECT through an aligned buffer."""
    fd = os.open(path, os.O_RDONLY | flags)
    buf, out = mmap.mmap(-1, block), bytearray()
    try:
        while n := os.readv(fd, [buf]):
            out += buf[:n]
    finally:
        os.close(fd)
        buf.close()
    return bytes(out)


def test_disk_bytes_and_a_loop_device_over_them(scratch, disk_files):
    needs_root_and_fuse()
    img, mapf, want = disk_files
    mnt, trace = scratch / "mnt", scratch / "trace.txt"
    proc, banner = start_hddsim(mnt, "--disk", img, "--disk-map", mapf, "--trace", trace)
    try:
        assert f"extents 4 bytes {DISK} platter 0.0000.." in banner, banner + proc.stderr.read()
        assert sorted(os.listdir(mnt)) == ["disk"]
        disk = os.path.join(mnt, "disk")
        assert os.path.getsize(disk) == DISK
        assert read_all(disk) == want  # image bytes, video extents, holes, past the image
        with pytest.raises(OSError) as e:
            os.open(disk, os.O_WRONLY)
        assert e.value.errno == 30  # EROFS

        with loop_device(disk) as loop:
            dio = subprocess.run(["losetup", "-n", "-O", "DIO,RO", loop], capture_output=True,
                                 text=True, check=True).stdout.split()
            assert dio == ["1", "1"], dio
            before = stats(mnt)
            # 4 MiB direct reads: the kernel splits each into FUSE's 1 MiB pieces.
            assert read_all(loop, os.O_DIRECT, 4 * MIB) == want
            after = stats(mnt)
    finally:
        stop_hddsim(proc, mnt)
    # Direct I/O: every byte of the loop device's read reached the drive model.
    assert after["bytes"] - before["bytes"] == DISK
    # Pieces of one command served as one transfer, and counted as one command.
    assert after["merged"] > before["merged"]
    assert after["commands"] == after["reads"] - after["merged"]
    assert after["commands_over_1m"] > 0
    assert abs(after["position_s"] + after["overhead_s"] + after["transfer_s"] - after["busy_s"]) < 1e-3
    rows = [line.split() for line in open(trace, encoding="ascii") if not line.startswith("#")]
    assert all(0 <= int(r[1]) and int(r[1]) + int(r[2]) <= DISK for r in rows)
    merged = [r for r in rows if r[8] == "merge"]
    assert len(merged) == after["merged"] and all(float(r[5]) == 0 for r in merged)


def test_ext4_reads_a_video_where_filefrag_says_it_lies(scratch):
    needs_root_and_fuse()
    src = scratch / "src"
    (src / "sd").mkdir(parents=True)
    size = 3 * MIB + 777
    stored = os.urandom(size)  # written blocks; the map makes them the video's
    (src / "sd" / "v.mp4").write_bytes(stored)
    (src / "note.txt").write_bytes(b"kept in the image\n")
    img, mapf, trace = scratch / "ext4.img", scratch / "ext4.map", scratch / "trace.txt"
    with open(img, "wb") as f:
        f.truncate(DISK)
    subprocess.run(["mkfs.ext4", "-q", "-F", "-b", "4096", "-d", str(src), str(img)], check=True)
    # No extents: the disk is the image; filefrag through the stack places the file.
    mapf.write_text(f"lcdm 1\ndisk {DISK}\n")
    with ext4_on_disk(scratch, img, mapf) as fs:
        assert (fs / "sd" / "v.mp4").read_bytes() == stored
        extents = filefrag(fs / "sd" / "v.mp4")
    assert sum(n for _, _, n in extents) == -(-size // 4096) * 4096
    # Those extents become the video's: ext4 now reads synthesized bytes there.
    mapf.write_text(f"lcdm 1\ndisk {DISK}\n" + "".join(
        f"extent {phys} {n} sd/v.mp4 {logical}\n" for logical, phys, n in extents))
    with ext4_on_disk(scratch, img, mapf, trace) as fs:
        assert (fs / "sd" / "v.mp4").read_bytes() == content_bytes("sd/v.mp4", 0, size)
        assert (fs / "note.txt").read_bytes() == b"kept in the image\n"
        assert filefrag(fs / "sd" / "v.mp4") == extents
    # The drive read the video where filefrag placed it: every byte of its
    # extents, and nothing of the video elsewhere.
    rows = [line.split() for line in open(trace, encoding="ascii") if not line.startswith("#")]
    covered = set()
    for r in rows:
        covered.update(range(int(r[1]) // 4096, (int(r[1]) + int(r[2])) // 4096))
    for _, phys, n in extents:
        assert set(range(phys // 4096, (phys + n) // 4096)) <= covered


@pytest.mark.parametrize("args, err", [
    (["--disk", "IMG"], "usage"),
    (["--disk", "IMG", "--disk-map", "MAP", "--start", "0.5"], "do not apply to --disk"),
    (["--disk", "IMG", "--disk-map", "MAP", "--library", "IMG"], "usage"),
])
def test_disk_mode_usage_errors(scratch, disk_files, args, err):
    img, mapf, _ = disk_files
    args = [{"IMG": str(img), "MAP": str(mapf)}.get(a, a) for a in args]
    r = subprocess.run([bin_path("hddsim"), str(scratch / "mnt"), *args], capture_output=True, text=True)
    assert r.returncode == 2 and err in r.stderr


def test_malformed_map_names_file_and_line(scratch, disk_files):
    img, mapf, _ = disk_files
    mapf.write_text(mapf.read_text() + f"extent {9 * MIB} 4096 sd/x.mp4 0\n")
    (scratch / "mnt").mkdir()
    r = subprocess.run([bin_path("hddsim"), str(scratch / "mnt"), "--disk", str(img), "--disk-map",
                        str(mapf)], capture_output=True, text=True)
    n = len(mapf.read_text().splitlines())
    assert r.returncode == 1
    assert r.stderr.strip().splitlines() == [
        f'hddsim: disk map "{mapf}" line {n}: extent overlaps the one on line 6']
