"""Control an hddsim mount from Python (tests, benchmarks, calibration).

    with Mount("/mnt/x", "wd-red", "lib.lcvl", trace="t.txt") as m:
        m.read_ahead_kb = 1024
        ...read files under m.path...
        print(m.stats()["utilisation"])

The mount is up when the constructor's start() returns; leaving the `with`
block unmounts it (SIGTERM, then fusermount3 -u, then a lazy unmount).
"""
import contextlib
import os
import select
import shutil
import signal
import subprocess
import time

from . import pagecache

HERE = os.path.dirname(os.path.abspath(__file__))

# Keyword options of Mount -> hddsim command-line flags.
_FLAGS = {
    "start": "--start", "max_request": "--max-request", "max_background": "--max-background",
    "congestion_threshold": "--congestion-threshold", "threads": "--threads",
    "policy": "--policy", "queue_depth": "--queue-depth", "readahead": "--readahead",
    "segments": "--segments", "meta_group": "--meta-group", "drive_file": "--drive-file",
    "disk": "--disk", "disk_map": "--disk-map",
}
# Keyword options of Mount that are flags without a value.
_SWITCHES = {"spread": "--spread"}


class HddsimError(RuntimeError):
    pass


def binary():
    """The hddsim executable: $HDDSIM, next to an installed harness, the
    source tree's build/, or PATH."""
    cands = [os.environ.get("HDDSIM", "")]
    for base in (HERE, os.path.realpath(HERE)):
        cands.append(os.path.join(base, "..", "..", "..", "..", "bin", "hddsim"))  # PREFIX/share/libception/harness/libception
        cands.append(os.path.join(base, "..", "..", "build", "bin", "hddsim"))  # repo/harness
    cands.append(shutil.which("hddsim") or "")
    for c in cands:
        if c and os.access(c, os.X_OK):
            return os.path.realpath(c)
    raise HddsimError("hddsim: executable not found (build it with make, or set HDDSIM)")


def video_files(mount, name, size, chunk):
    """The files holding a video under a mount, in order: its one file, or
    its chunk files NAME/000000, NAME/000001, ... (docs/library-format.md)."""
    if not chunk:
        return [os.path.join(mount, name)]
    return [os.path.join(mount, name, f"{k:06d}") for k in range(-(-size // chunk))]


def library_files(library):
    """(path, size, video name, offset in the video) of every file a
    library file (docs/library-format.md) lists, in its order."""
    with open(library, encoding="ascii") as f:
        for line in f:
            p = line.split()
            if not p or p[0] != "video":
                continue
            name, size, chunk = p[1], int(p[2]), int(p[4])
            for k, path in enumerate(video_files("", name, size, chunk)):
                yield path, min(chunk, size - k * chunk) if chunk else size, name, k * chunk


def read_videos(mount, videos):
    """Read each (name, size, chunk) video whole, chunk files in order,
    with `cat`, as the chunking paper's `wc` runs did; (bytes, seconds)."""
    total, t0 = 0, time.monotonic()
    for name, size, chunk in videos:
        subprocess.run(["cat", *video_files(mount, name, size, chunk)],
                       stdout=subprocess.DEVNULL, check=True)
        total += size
    return total, time.monotonic() - t0


def is_mounted(path):
    path = os.path.realpath(path)
    with open("/proc/self/mountinfo", encoding="utf-8") as f:
        return any(line.split()[4] == path for line in f)


class Mount:
    def __init__(self, mountpoint, drive="wd-red", library=None, trace=None,
                 read_ahead_kb=None, allow_other=True, timeout=30, **opts):
        if library is None and not opts.get("disk"):
            raise HddsimError("hddsim: Mount needs a library or a disk image")
        unknown = set(opts) - set(_FLAGS) - set(_SWITCHES)
        if unknown:
            raise HddsimError(f"hddsim: unknown Mount options {sorted(unknown)}")
        self.path = os.path.realpath(mountpoint)
        self.drive, self.library, self.trace = drive, library, trace
        self.bdi = None
        self.proc = None
        self.banner = ""
        cmd = [binary(), self.path, "--drive", drive]
        if library is not None:
            cmd += ["--library", str(library)]
        if trace:
            cmd += ["--trace", str(trace)]
        if not allow_other:
            cmd.append("--no-allow-other")
        for k, v in opts.items():
            if k in _SWITCHES:
                cmd += [_SWITCHES[k]] if v else []
            elif v is not None:
                cmd += [_FLAGS[k], str(v)]
        self.cmd = cmd
        # An error or a signal (the benchmark's SIGTERM) after hddsim has
        # started and before this returns would leave it running and
        # mounted, held by no one: the caller has no Mount to unmount.
        try:
            self._start(timeout)
            if read_ahead_kb is not None:
                self.read_ahead_kb = read_ahead_kb
        except BaseException:
            self.unmount()
            raise

    def _start(self, timeout):
        os.makedirs(self.path, exist_ok=True)
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, start_new_session=True)
        deadline = time.monotonic() + timeout
        line = ""
        while time.monotonic() < deadline:
            r, _, _ = select.select([self.proc.stdout], [], [], 0.2)
            if r:
                line = self.proc.stdout.readline()
                break
            if self.proc.poll() is not None:
                break
        if "mounted" not in line:
            err = ""
            if self.proc.poll() is None:
                self._kill()
            else:
                err = self.proc.stderr.read().strip()
            raise HddsimError(err or f"hddsim: no mount within {timeout} s: {' '.join(self.cmd)}")
        self.banner = line.strip()
        fields = self.banner.split()
        self.bdi = fields[fields.index("bdi") + 1]
        # Wait until the kernel answers through the mount.
        while not is_mounted(self.path):
            if time.monotonic() > deadline:
                self.unmount()
                raise HddsimError(f"hddsim: {self.path} did not appear in mountinfo")
            time.sleep(0.02)

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    # -- kernel tuning -------------------------------------------------------
    def _bdi_file(self, name):
        return f"/sys/class/bdi/{self.bdi}/{name}"

    @property
    def read_ahead_kb(self):
        with open(self._bdi_file("read_ahead_kb"), encoding="ascii") as f:
            return int(f.read())

    @read_ahead_kb.setter
    def read_ahead_kb(self, kb):
        with open(self._bdi_file("read_ahead_kb"), "w", encoding="ascii") as f:
            f.write(str(int(kb)))

    # -- observation ---------------------------------------------------------
    def stats(self):
        """The live counters of MOUNT/.hddsim/stats as a dict of numbers."""
        out = {}
        with open(os.path.join(self.path, ".hddsim", "stats"), encoding="ascii") as f:
            for line in f:
                k, _, v = line.strip().partition(" ")
                try:
                    out[k] = float(v) if "." in v else int(v)
                except ValueError:
                    out[k] = v
        return out

    @contextlib.contextmanager
    def untimed(self, timeout=10):
        """Inside the block, reads are answered at once and leave the
        drive model untouched (SIGUSR1; SIGUSR2 on leaving): filling the
        page cache before a probe need not wait out the disk."""
        self._set_timed(0, timeout)
        try:
            yield self
        finally:
            self._set_timed(1, timeout)

    def _set_timed(self, timed, timeout):
        os.kill(self.pid, signal.SIGUSR2 if timed else signal.SIGUSR1)
        deadline = time.monotonic() + timeout
        while self.stats().get("timed") != timed:
            if time.monotonic() > deadline:
                raise HddsimError(f"hddsim: {self.path} did not turn timed={timed}")
            time.sleep(0.01)

    def drop_cache(self, paths=None):
        """Drop the page cache of the given files (default: every file of
        the mount) with POSIX_FADV_DONTNEED; other file systems keep theirs."""
        if paths is None:
            pagecache.evict_tree(self.path, skip=(".hddsim",))
        for p in paths or ():
            pagecache.evict(p)

    # -- teardown ------------------------------------------------------------
    def _kill(self):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()

    def unmount(self, timeout=10):
        """SIGTERM (hddsim unmounts itself), then fusermount3 -u, then -uz."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                pass
        if is_mounted(self.path):
            subprocess.run(["fusermount3", "-u", self.path], stderr=subprocess.DEVNULL, check=False)
        if is_mounted(self.path):
            subprocess.run(["fusermount3", "-uz", self.path], stderr=subprocess.DEVNULL, check=False)
        if self.proc.poll() is None:
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self._kill()
        self.proc.stdout.close()
        self.proc.stderr.close()
        self.proc = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.unmount()
        return False
