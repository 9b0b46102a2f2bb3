"""Build (or find in the cache) the ext4 or xfs image and extent map of a video library for hddsim --disk.

    libception mkdisk LIB [--fs ext4|xfs] [--out DIR]

Prints the image's and the map's paths (for `hddsim MOUNT --disk IMAGE
--disk-map MAP`).  Images are cached under DIR (default
$LIBCEPTION_DISK_CACHE or /var/cache/libception/disks) by the library's
content and the file system's options; see docs/hddsim.md, "Block disk".
"""
import sys

from . import diskimage


def add_arguments(p):
    p.add_argument("library", metavar="LIB", help="video library file (lcvl 1)")
    p.add_argument("--fs", default="ext4", choices=diskimage.FILESYSTEMS,
                   help="file system of the image (default ext4)")
    p.add_argument("--out", metavar="DIR", help="cache directory (default: "
                   "$LIBCEPTION_DISK_CACHE or /var/cache/libception/disks)")


def main(args):
    try:
        img = diskimage.build(args.library, args.fs, args.out,
                              log=lambda m: print(f"mkdisk: {m}", file=sys.stderr, flush=True))
    except (OSError, diskimage.DiskImageError) as e:
        print(f"mkdisk: {e}", file=sys.stderr)
        return 1
    i = img.info
    print(f"mkdisk: {i['files']} files in {i['directories']} directories, "
          f"{i['data_bytes'] / 1e9:.1f} GB of video on a {i['image_bytes'] / 1e9:.1f} GB disk, "
          f"{i['allocated_bytes'] / 1e6:.1f} MB stored, built in {i['build_s']} s", file=sys.stderr)
    print(f"image {img.image}")
    print(f"map {img.map}")
    return 0
