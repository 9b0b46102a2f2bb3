"""The page cache: evict files from it (POSIX_FADV_DONTNEED), so that a
measurement or a test starts cold, and count what of a file it holds
(cachestat(2)).  Dirty pages are not dropped: fsync a file just written
first."""
import collections
import ctypes
import os

Cachestat = collections.namedtuple(
    "Cachestat", "nr_cache nr_dirty nr_writeback nr_evicted nr_recently_evicted")
_libc = ctypes.CDLL(None, use_errno=True)
_SYS_CACHESTAT = 451   # the same number on every architecture


def cachestat_fd(fd, off=0, length=0, name="fd"):
    """The page-cache counters of [off, off+length) of an open file
    (cachestat(2); length 0: to the end), as root.  nr_evicted counts the
    shadow entries that reclaim leaves where it took a page; an
    invalidation leaves none."""
    rng = (ctypes.c_uint64 * 2)(off, length)
    out = (ctypes.c_uint64 * 5)()
    if _libc.syscall(_SYS_CACHESTAT, fd, rng, out, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"cachestat {name}: {os.strerror(err)}")
    return Cachestat(*out)


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
