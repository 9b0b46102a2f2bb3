"""receptiond --watch: prefetching through fanotify pre-content events, with
no library in the reader.  On a real ext4 (a loop-mounted image); the
deadline test puts the image on hddsim so that every window takes the
emulated drive's time.

The bounds on how long a reader may wait are hang detectors (seconds
against a deadline of milliseconds), not performance claims."""
import mmap
import os
import shutil
import signal
import subprocess
import threading
import time

import pytest

from fixtures_daemon import RECEPTIOND, Daemon, drop_cache, make_cold_file

HANG = 30  # s: a reader still waiting after this long is hung


def _run(*cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def _pre_content_supported():
    rel = os.uname().release.split(".")
    return (int(rel[0]), int(rel[1])) >= (6, 14)


pytestmark = pytest.mark.skipif(not _pre_content_supported() or os.geteuid() != 0,
                                reason="pre-content fanotify events need Linux >= 6.14 and root")


class Ext4:
    """An ext4 image mounted through a loop device, filled before marking."""

    def __init__(self, path, size_mb=96, image_dir=None):
        self.dir = path
        self.image = os.path.join(image_dir or path, "ext4.img")
        self.mnt = os.path.join(path, "mnt")
        os.makedirs(self.mnt, exist_ok=True)
        with open(self.image, "wb") as f:
            f.truncate(size_mb << 20)
        _run("mkfs.ext4", "-q", "-F", self.image)
        self.mount()

    def mount(self, opts="loop"):
        _run("mount", "-o", opts, self.image, self.mnt)

    def umount(self):
        subprocess.run(["umount", self.mnt], capture_output=True)

    def file(self, name, size, seed=1):
        return make_cold_file(os.path.join(self.mnt, name), size, seed)


@pytest.fixture
def ext4(tmp_path):
    fs = Ext4(str(tmp_path))
    yield fs
    fs.umount()


def _children(pid):
    """Children of every thread of pid (the watchdog may be forked by any)."""
    kids = []
    try:
        for t in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{t}/children") as f:
                kids += [int(p) for p in f.read().split()]
    except OSError:
        pass
    return kids


class Watcher(Daemon):
    """A foreground receptiond in watch mode; its watchdog is killed with it."""

    def kill(self):
        dogs = _children(self.proc.pid) if self.proc else []
        super().kill()
        for d in dogs:
            try:
                os.kill(d, signal.SIGCONT)
                os.kill(d, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def watch(self):
        return self.stats()["watch"]

    def loop_device(self):
        """The statistics of the loop device under the watched ext4."""
        return next(d for d in self.stats()["devices"] if d["name"].startswith("loop"))

    def watchdog(self):
        kids = _children(self.proc.pid)
        return kids[0] if kids else None


@pytest.fixture
def watcher(tmp_path):
    made = []

    def make(paths, *args):
        d = Watcher(str(tmp_path / f"d{len(made)}"))
        os.makedirs(d.dir, exist_ok=True)
        made.append(d)
        extra = [a for p in paths for a in ("--watch", p)] + list(args)
        return d.start(extra)
    yield make
    for d in made:
        d.kill()


def _sha(path):
    return _run("sha256sum", path).stdout.split()[0]


def test_refuses_file_systems_without_pre_content_events(tmp_path):
    tmpfs = tmp_path / "tmpfs"
    tmpfs.mkdir()
    _run("mount", "-t", "tmpfs", "-o", "size=1m", "none", str(tmpfs))
    try:
        r = subprocess.run([RECEPTIOND, "--foreground", "--socket", str(tmp_path / "s"),
                            "--watch", str(tmpfs)], capture_output=True, text=True, timeout=20)
    finally:
        _run("umount", str(tmpfs))
    assert r.returncode == 1
    assert "no pre-content events" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_refuses_the_mount_of_its_own_files(tmp_path):
    """The root file system holds the daemon's binary and libc: a listener
    that faults on its own code would wait for itself."""
    r = subprocess.run([RECEPTIOND, "--foreground", "--socket", str(tmp_path / "s"),
                        "--watch", "/"], capture_output=True, text=True, timeout=20)
    assert r.returncode == 1
    assert "daemon's own" in r.stderr


def test_every_read_call_sees_exact_bytes_and_misses_are_queued(ext4, watcher):
    size = 6 << 20
    path = ext4.file("video.bin", size)
    with open(path, "rb") as f:
        want = f.read()
    w = watcher([ext4.mnt])

    def cold():
        drop_cache(path)  # (a remount would be a new mount, without the mark)

    def via_read():
        with open(path, "rb") as f:
            return f.read()

    def via_pread():
        fd = os.open(path, os.O_RDONLY)
        try:
            return b"".join(os.pread(fd, 65536, o) for o in range(0, size, 65536))
        finally:
            os.close(fd)

    def via_fd_to_fd(call):
        # copy_file_range needs both files on one file system
        out = os.path.join(ext4.mnt, "out.bin") if call == "copy_file_range" else ext4.dir + "/out.bin"
        fd, o = os.open(path, os.O_RDONLY), os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        try:
            done = 0
            while done < size:
                if call == "sendfile":
                    n = os.sendfile(o, fd, done, 1 << 20)
                else:
                    n = os.copy_file_range(fd, o, 1 << 20, done)
                assert n > 0
                done += n
        finally:
            os.close(fd), os.close(o)
        with open(out, "rb") as f:
            return f.read()

    def via_splice():
        r, wp = os.pipe()
        fd = os.open(path, os.O_RDONLY)
        got = []
        try:
            off = 0
            while off < size:
                n = os.splice(fd, wp, 65536, offset_src=off)
                off += n
                got.append(os.read(r, n))
        finally:
            os.close(fd), os.close(r), os.close(wp)
        return b"".join(got)

    def via_mmap():
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) as m:
            return bytes(m[:])

    for name, how in [("read", via_read), ("pread", via_pread),
                      ("sendfile", lambda: via_fd_to_fd("sendfile")),
                      ("copy_file_range", lambda: via_fd_to_fd("copy_file_range")),
                      ("splice", via_splice), ("mmap", via_mmap)]:
        cold()
        before = w.watch()
        assert how() == want, name
        after = w.watch()
        assert after["events"] > before["events"], name
        assert after["misses"] > before["misses"], name
        assert after["answered_resident"] > before["answered_resident"], name
    dev = w.device(path=path)
    assert dev["requests"] > 0 and dev["bytes_read"] > 0


def test_real_programs_identical_with_the_daemon_up_stopped_and_killed(ext4, watcher, tmp_path):
    tree = os.path.join(ext4.mnt, "tree")
    os.makedirs(os.path.join(tree, "sub"))
    for i, size in enumerate([3 << 20, 1 << 20, 200000, 4096]):
        make_cold_file(os.path.join(tree, "sub" if i % 2 else "", f"f{i}"), size, seed=i + 2)
    ref = tmp_path / "ref"
    shutil.copytree(tree, ref)
    big = os.path.join(tree, "f0")
    want = _sha(str(ref / "f0"))

    def programs():
        for d, _, files in os.walk(tree):
            for f in files:
                drop_cache(os.path.join(d, f))
        assert _sha(big) == want
        cat = subprocess.run(["cat", big], capture_output=True, check=True).stdout
        with open(ref / "f0", "rb") as f:
            assert cat == f.read()
        assert subprocess.run(["diff", "-r", str(ref), tree]).returncode == 0
        out = tmp_path / "cp.bin"
        _run("cp", big, str(out))
        assert _sha(str(out)) == want
        _run("dd", f"if={big}", f"of={out}", "bs=64k", "status=none")
        assert _sha(str(out)) == want
        unpacked = tmp_path / "untar"
        shutil.rmtree(unpacked, ignore_errors=True)
        unpacked.mkdir()
        tar = subprocess.run(["tar", "-C", tree, "-cf", "-", "."], capture_output=True, check=True)
        subprocess.run(["tar", "-C", str(unpacked), "-xf", "-"], input=tar.stdout, check=True)
        assert subprocess.run(["diff", "-r", str(ref), str(unpacked)]).returncode == 0

    w = watcher([ext4.mnt])
    programs()
    assert w.watch()["misses"] > 0
    w.signal(signal.SIGSTOP)
    try:
        programs()          # the watchdog answers while the daemon is stopped
    finally:
        w.signal(signal.SIGCONT)
    w.kill()
    programs()              # no daemon, no watchdog: the kernel dropped the group


def _readers(paths, n_each=1):
    """Read every path in its own thread; return (threads, errors, times)."""
    errors, times = [], {}

    def read(p):
        t0 = time.monotonic()
        try:
            with open(p, "rb") as f:
                while f.read(1 << 20):
                    pass
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))
        times[p] = time.monotonic() - t0
    ts = [threading.Thread(target=read, args=(p,), daemon=True) for p in paths for _ in range(n_each)]
    for t in ts:
        t.start()
    return ts, errors, times


def _join(ts):
    for t in ts:
        t.join(HANG)
    return [t for t in ts if t.is_alive()]


def _read_together(paths, size=-1):
    """Read `size` bytes (all: -1) of every path, each in its own thread,
    all starting at once; returns the bytes in the order of paths."""
    got, start = {}, threading.Barrier(len(paths))

    def read(p):
        start.wait()
        with open(p, "rb") as f:
            got[p] = f.read(size)
    ts = [threading.Thread(target=read, args=(p,), daemon=True) for p in paths]
    for t in ts:
        t.start()
    assert not _join(ts), "a reader hung"
    return [got.get(p) for p in paths]


def test_readers_go_on_when_the_daemon_stops(ext4, watcher):
    """Stopped at several moments of a burst of cold reads, so that some
    stop lands between the listener's read() of a batch and its answers
    (events it holds then must still reach the watchdog)."""
    w = watcher([ext4.mnt], "--watch-deadline", "200")
    for round_, delay in enumerate((0, 0.001, 0.003, 0.01)):
        paths = [ext4.file(f"r{round_}-{i}", 2 << 20, seed=10 * round_ + i) for i in range(6)]
        ts, errors, _ = _readers(paths)
        time.sleep(delay)
        w.signal(signal.SIGSTOP)
        try:
            hung = _join(ts)
        finally:
            w.signal(signal.SIGCONT)
        assert not hung and not errors, f"stopped {delay * 1000:g} ms into the reads"
    assert w.alive()


def test_readers_go_on_when_the_daemon_dies(ext4, watcher):
    paths = [ext4.file(f"r{i}", 4 << 20, seed=i + 5) for i in range(6)]
    w = watcher([ext4.mnt], "--watch-deadline", "200")
    ts, errors, _ = _readers(paths)
    w.signal(signal.SIGKILL)
    assert not _join(ts) and not errors


def test_watchdog_stopped_or_killed_is_replaced(ext4, watcher):
    path = ext4.file("x", 1 << 20)
    w = watcher([ext4.mnt])
    # The daemon listens before its watch mode connects to it and forks
    # the watchdog (seen in CI: none yet right after start).
    end = time.monotonic() + HANG
    while time.monotonic() < end and w.watchdog() is None:
        time.sleep(0.05)
    for sig in (signal.SIGSTOP, signal.SIGKILL):
        old = w.watchdog()
        assert old
        os.kill(old, sig)
        end = time.monotonic() + HANG
        while time.monotonic() < end and w.watchdog() in (None, old):
            time.sleep(0.05)
        assert w.watchdog() not in (None, old)
    assert w.watch()["watchdog_restarts"] >= 2
    with open(path, "rb") as f:
        assert len(f.read()) == 1 << 20


@pytest.fixture
def ext4_on_hddsim(tmp_path, hddsim_mount):
    """make(n, size): n files of size bytes on an ext4 image that sits on
    an emulated disk, whose every window takes milliseconds; returns the
    paths and their bytes."""
    made = []

    def make(n, size):
        lib = tmp_path / "lib"
        lib.mkdir()
        stage = Ext4(str(tmp_path / "stage"), size_mb=max(64, n * size * 2 >> 20),
                     image_dir=str(lib))
        paths = [stage.file(f"v{i}", size, seed=i + 9) for i in range(n)]
        want = [open(p, "rb").read() for p in paths]
        stage.umount()
        disk = hddsim_mount(str(lib), name="disk")
        fs = Ext4.__new__(Ext4)
        fs.dir, fs.image, fs.mnt = str(tmp_path), os.path.join(disk.path, "ext4.img"), stage.mnt
        fs.mount("loop,ro")
        made.append(fs)
        return fs.mnt, paths, want
    yield make
    for fs in made:
        fs.umount()


def test_deadline_allows_reads_the_queue_has_not_reached(ext4_on_hddsim, watcher):
    """With a 1 ms deadline readers are let go before their window is
    resident, and the bytes are still the file's."""
    mnt, paths, want = ext4_on_hddsim(3, 3 << 20)
    w = watcher([mnt], "--watch-deadline", "1")
    got = []
    for p in paths:
        with open(p, "rb") as f:
            got.append(f.read())
    assert got == want
    assert w.watch()["answered_at_deadline"] > 0


def test_many_readers_at_once_are_all_queued(ext4_on_hddsim, watcher):
    """Every watched reader's miss comes to the daemon through the
    listener's one connection, so a client connection's limits (8 queued
    misses, the user's 64) must not apply to it: 48 cold readers at once
    on the emulated disk are all queued, none refused, and with a deadline
    far off none is let go before its window is resident."""
    n = 48
    mnt, paths, want = ext4_on_hddsim(n, 1 << 20)
    w = watcher([mnt], "--watch-deadline", "20000")
    assert _read_together(paths) == want
    dev, watch = w.loop_device(), w.watch()
    assert dev["busy_rejected"] == 0 and watch["answered_refused"] == 0, (dev, watch)
    assert watch["answered_at_deadline"] == 0 and watch["allowed_unqueued"] == 0, watch
    # more waited at once than one client connection may queue: the test
    # reached the limit it is about
    assert watch["waiting_max"] > 8, watch


@pytest.mark.parametrize("due", ["yes", "no"])
def test_windows_for_readers_let_go_are_not_read_late(ext4_on_hddsim, watcher, due):
    """48 readers each read a cold file's first 4 KiB at once; with a 1 ms
    watch deadline each is let go at once and reads it for itself.  A
    window nobody has asked for within the queue's --deadline (50 ms here)
    is dropped unread (`abandoned`), not read later for nobody, and the
    listener still gets its answer (it frees the reader's slot and
    descriptor on it).  The daemon knows a reader let go whether or not
    the order serves watched misses by their deadline (--watch-due)."""
    from fixtures_hostile import proc_fds, settle
    n, size = 48, 2 << 20
    mnt, paths, want = ext4_on_hddsim(n, size)
    w = watcher([mnt], "--watch-deadline", "1", "--deadline", "50", "--watch-due", due)
    fds_before = proc_fds(w.proc.pid)
    assert _read_together(paths, 4096) == [x[:4096] for x in want]
    # A reader let go may read its page before the daemon looks: that
    # request is a hit.  Every other one is read or dropped.
    dev = settle(w.loop_device, lambda d: d["requests"] == n and d["queue_now"] == 0
                 and d["inflight_now"] == 0, timeout=HANG)
    assert dev["reads"] + dev["abandoned"] + dev["hits"] == n and dev["abandoned"] > 0, dev
    # the dropped windows were not read: less than a window per reader
    assert dev["bytes_read"] < n * size - dev["abandoned"] * (size // 2), dev
    # every slot answered and closed: the descriptors come back
    fds = settle(lambda: proc_fds(w.proc.pid), lambda k: k <= fds_before + 2, timeout=HANG)
    assert fds <= fds_before + 2, (fds, fds_before, dev)


def test_libception_watch_starts_a_watching_daemon_and_stop_ends_it(ext4, tmp_path):
    from conftest import bin_path
    lc = bin_path("libception")
    sock = str(tmp_path / "w.sock")
    path = ext4.file("v", 2 << 20)
    r = subprocess.run([lc, "watch", "--socket", sock, "--deadline", "300", ext4.mnt],
                       capture_output=True, text=True, timeout=60)
    try:
        assert r.returncode == 0, r.stderr
        again = subprocess.run([lc, "watch", "--socket", sock, ext4.mnt],
                               capture_output=True, text=True, timeout=60)
        assert again.returncode == 1 and "already listens" in again.stderr
        with open(path, "rb") as f:
            f.read()
        from libception import daemon as lcd
        w = lcd.stats(sock)["watch"]
        assert w["deadline_ms"] == 300 and w["misses"] > 0
    finally:
        subprocess.run([lc, "stop", "--socket", sock], capture_output=True, timeout=60)
    refused = subprocess.run([lc, "watch", "--socket", sock, str(tmp_path)],
                             capture_output=True, text=True, timeout=60)
    assert refused.returncode == 1 and "receptiond" not in refused.stdout


def test_a_program_under_the_library_is_not_handled_twice(ext4, watcher, need_library):
    """The library makes each window resident before the read; the read's
    event then finds it cached: no second queued miss."""
    path = ext4.file("lib.bin", 8 << 20)
    w = watcher([ext4.mnt])
    before = w.watch()
    env = w.env()
    out = subprocess.run(["cat", path], env=env, capture_output=True, check=True).stdout
    assert len(out) == 8 << 20
    after = w.watch()
    assert after["events"] > before["events"]
    assert after["misses"] == before["misses"]
    assert w.device(path=path)["requests"] > 0


def _read_all(path):
    with open(path, "rb") as f:
        return len(f.read())


def test_a_file_found_wholly_cached_goes_quiet_until_the_recheck(ext4, watcher):
    """Its reads raise no events, so a hit costs what it costs unwatched;
    once the marks are flushed the file is heard again, and a miss on it
    is queued as before."""
    path = ext4.file("small.bin", 1 << 20)
    w = watcher([ext4.mnt], "--watch-recheck", "1000")
    _read_all(path)            # cold: a miss, then resident
    for _ in range(HANG):
        _read_all(path)        # a hit on a file wholly cached: quieted
        before = w.watch()
        for _ in range(20):
            _read_all(path)
        after = w.watch()
        if after["quiet_flushes"] == before["quiet_flushes"]:
            break              # no flush between the two looks
    assert after["quieted"] >= 1
    assert after["events"] == before["events"], "a quiet file raised events"
    end = time.monotonic() + HANG
    while time.monotonic() < end and w.watch()["quiet_flushes"] == after["quiet_flushes"]:
        time.sleep(0.05)
    drop_cache(path)
    _read_all(path)
    heard = w.watch()
    assert heard["events"] > after["events"] and heard["misses"] > after["misses"]


@pytest.mark.parametrize("quiet", ["512K", "0"])
def test_a_file_over_watch_quiet_is_always_heard(ext4, watcher, quiet):
    path = ext4.file("big.bin", 1 << 20)
    w = watcher([ext4.mnt], "--watch-quiet", quiet)
    _read_all(path)
    _read_all(path)
    before = w.watch()
    _read_all(path)
    after = w.watch()
    assert after["events"] > before["events"] and after["quieted"] == 0
    assert after["quiet_max_bytes"] == (512 << 10 if quiet == "512K" else 0)


def test_watch_metrics_are_the_statistics_own(ext4, watcher):
    """`libception stats --prometheus` of a watching daemon has the
    libception_watch_* families, equal to the statistics, and promtool
    (when installed) accepts the text."""
    from test_service_metrics import LIBCEPTION, promtool, sample
    path = ext4.file("m.bin", 1 << 20)
    w = watcher([ext4.mnt])
    _read_all(path)
    _read_all(path)
    before = w.watch()
    text = subprocess.run([LIBCEPTION, "stats", "--socket", w.path, "--prometheus"],
                          capture_output=True, text=True, check=True, timeout=30).stdout
    after = w.watch()
    for metric, key in [("events", "events"), ("hits", "hits"), ("misses", "misses"),
                        ("quieted_files", "quieted"), ("quiet_flushes", "quiet_flushes")]:
        v = sample(text, f"libception_watch_{metric}_total")
        assert before[key] <= v <= after[key], metric
    assert sample(text, "libception_watch_misses_total") > 0
    assert sample(text, "libception_watch_answers_total", how="resident") >= 0
    if os.path.exists("/usr/bin/promtool"):
        rc, problems = promtool(text)
        assert rc == 0 and not problems.strip(), problems
