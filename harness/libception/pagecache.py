"""Evict files from the page cache (POSIX_FADV_DONTNEED), so that a
measurement or a test starts cold.  Dirty pages are not dropped: fsync a
file just written first."""
import os


def evict(path):
    """Drop path's clean pages from the page cache."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def evict_tree(root, skip=()):
    """Evict every readable file under root; directories named in `skip`
    directly under root are left out (hddsim's .hddsim)."""
    for d, dirs, files in os.walk(root):
        if d == root:
            dirs[:] = [x for x in dirs if x not in skip]
        for f in files:
            try:
                evict(os.path.join(d, f))
            except OSError:
                continue
