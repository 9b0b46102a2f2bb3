"""The block disk's images (libception mkdisk, hddsim/mkdisk.c,
xfsimage.py): a clean ext4 or xfs holding the library's files with written extents, a MAP that says
where each video's bytes lie, a sparse image, and the cache.  These need
no hddsim: the image is loop-mounted straight from the local disk (its
video blocks read as zeros there, as they were never written)."""
import os
import re
import subprocess

import pytest

from conftest import bin_path
from fixtures_hddsim import expected_files, write_library
from libception import blockdisk, diskimage, loopdev

MiB = 1 << 20
# A few dozen small videos (sizes not multiples of a block), two directories.
SD = [(f"sd/v{i:05d}.mp4", 200_000 + i * 37_777, 419430, 0) for i in range(30)]
HD = [(f"hd/v{i:05d}.mp4", 3 * MiB + i * 4099, 2097150, 0) for i in range(6)]
CHUNKED = [(f"sd/c{i:05d}.mp4", 5 * MiB + 12345, 419430, MiB // 2) for i in range(4)] + \
          [(f"hd/c{i:05d}.mp4", 9 * MiB + 1, 2097150, 2 * MiB) for i in range(3)]


KINDS = [(fs, lib) for fs in diskimage.FILESYSTEMS for lib in ("plain", "chunked")]
CHECK = {"ext4": ["e2fsck", "-fn"], "xfs": ["xfs_repair", "-n"]}


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    d = tmp_path_factory.mktemp("diskimage")
    cache = d / "cache"
    libs = {"plain": (write_library(d / "plain.lcvl", SD + HD), SD + HD),
            "chunked": (write_library(d / "chunked.lcvl", CHUNKED), CHUNKED)}
    out = {"cache": cache, "dir": d}
    for fs, kind in KINDS:
        lib, videos = libs[kind]
        out[fs, kind] = (diskimage.build(str(lib), fs, cache=str(cache)), videos)
    return out


@pytest.fixture
def loop_mounted(tmp_path):
    """mount(image) -> mount point, the image on a loop device read-only;
    unmounted and detached after the test."""
    made = []

    def mount(image, fs):
        dev = loopdev.attach(image, direct=False)
        where = tmp_path / f"m{len(made)}"
        where.mkdir()
        made.append((dev, where))
        subprocess.run(["mount", "-t", fs, "-o", blockdisk.MOUNT_OPTIONS[fs], dev, str(where)],
                       check=True)
        return where

    yield mount
    for dev, where in reversed(made):
        subprocess.run(["umount", str(where)], check=False)
        loopdev.detach(dev)


def stored_ranges(path):
    """[(offset, length)] of the data (not holes) a sparse file stores."""
    out, pos = [], 0
    with open(path, "rb") as f:
        while True:
            try:
                start = os.lseek(f.fileno(), pos, os.SEEK_DATA)
            except OSError:   # ENXIO: no data after pos
                return out
            pos = os.lseek(f.fileno(), start, os.SEEK_HOLE)
            out.append((start, pos - start))


def map_by_video(img):
    out = {}
    for disk, length, video, voff in img.extents():
        out.setdefault(video, []).append((voff, disk, length))
    return {v: sorted(e) for v, e in out.items()}


@pytest.mark.parametrize("fs, kind", KINDS)
def test_image_is_clean_and_sparse(images, fs, kind):
    img, videos = images[fs, kind]
    r = subprocess.run(CHECK[fs] + [img.image], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    data = sum(-(-size // 4096) * 4096 for _, size, _, _ in videos)
    assert img.info["data_bytes"] >= data
    # No video block was written: the videos' extents lie in holes of the
    # image but for what mkfs zeroed before they existed (xfs: its first
    # 128 KiB).
    stored = stored_ranges(img.image)
    written = sum(max(0, min(d + n, s + k) - max(d, s))
                  for d, n, _, _ in img.extents() for s, k in stored)
    assert written <= 128 * 1024, written


@pytest.mark.parametrize("fs, kind", KINDS)
def test_map_covers_every_video_once(images, fs, kind):
    img, videos = images[fs, kind]
    disk, extents = diskimage.read_map(img.map)
    assert disk == os.path.getsize(img.image)
    spans = sorted((d, d + n) for d, n, _, _ in extents)
    for (_, end), (start, _) in zip(spans, spans[1:]):
        assert end <= start, "extents overlap"
    assert spans[-1][1] <= disk
    by_video = map_by_video(img)
    assert set(by_video) == {name for name, *_ in videos}
    for name, size, _, _ in videos:
        covered = by_video[name]
        assert all(d % 4096 == 0 and n % 4096 == 0 for _, d, n in covered)
        # Contiguous in the video from 0, through its last block.
        pos = 0
        for voff, _, n in covered:
            assert voff == pos
            pos += n
        assert pos == -(-size // 4096) * 4096


def test_library_order_is_platter_order(images):
    """ext4 images are packed in library order (xfs places files itself)."""
    img, videos = images["ext4", "plain"]
    first = {v: e[0][1] for v, e in map_by_video(img).items()}
    starts = [first[name] for name, *_ in videos]
    assert starts == sorted(starts)


@pytest.mark.parametrize("fs, kind", KINDS)
def test_fiemap_matches_map_and_extents_are_written(images, fs, kind, loop_mounted):
    img, videos = images[fs, kind]
    root = loop_mounted(img.image, fs)
    by_video = map_by_video(img)
    checked = 0
    for path, (video, voff, size) in expected_files(videos).items():
        assert os.path.getsize(root / path) == size
        out = subprocess.run(["filefrag", "-v", "-b4096", str(root / path)], check=True,
                             capture_output=True, text=True).stdout
        rows = re.findall(r"^\s*\d+:\s+(\d+)\.\.\s*(\d+):\s+(\d+)\.\.\s*(\d+):\s+\d+:.*?(\S*)$",
                          out, re.M)
        assert rows, out
        for lstart, lend, pstart, _pend, flags in rows:
            assert "unwritten" not in flags, out
            fstart = voff + int(lstart) * 4096
            length = (int(lend) - int(lstart) + 1) * 4096
            # The MAP says the same disk bytes hold these video bytes.
            assert any(v <= fstart and fstart + length <= v + n and d + fstart - v == int(pstart) * 4096
                       for v, d, n in by_video[video]), (path, rows, by_video[video])
            checked += 1
    assert checked >= len(videos)


def test_cache_reuses_and_keys_on_content(images):
    img, videos = images["ext4", "plain"]
    again = diskimage.build(img.info["library"], cache=str(images["cache"]))
    assert again.dir == img.dir and again.info == img.info
    assert images["xfs", "plain"][0].dir != img.dir   # the file system is in the key
    changed = write_library(images["dir"] / "changed.lcvl", videos[:-1])
    other = diskimage.build(str(changed), cache=str(images["cache"]))
    assert other.dir != img.dir
    assert len(other.extents()) < len(img.extents())


def test_mkdisk_command(images, tmp_path):
    lib = write_library(tmp_path / "one.lcvl", SD[:3])
    cmd = [bin_path("libception"), "mkdisk", str(lib), "--out", str(tmp_path / "c")]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    paths = dict(line.split(" ", 1) for line in r.stdout.splitlines())
    assert os.path.exists(paths["image"]) and os.path.exists(paths["map"])
    assert "3 files" in r.stderr
    bad = subprocess.run([bin_path("libception"), "mkdisk", str(tmp_path / "missing.lcvl"),
                          "--out", str(tmp_path / "c")], capture_output=True, text=True)
    assert bad.returncode == 1 and bad.stderr.count("\n") == 1, bad.stderr
