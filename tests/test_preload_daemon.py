"""libception.so and its daemon: what it asks (checked against a scripted
stand-in), that every daemon fault leaves the program's output intact, and
the real receptiond up, killed halfway and restarted."""
import os
import signal
import subprocess
import sys
import time

import pytest

from fixtures_preload import (T_CALLS, debug_counts, drop_cache, lib_env, plain_env, run,
                              write_file)


def expect_copy(path, env, method="pread", bs=65536):
    code, out, err = run([T_CALLS, "copy", method, path, str(bs)], env)
    assert code == 0, err
    assert out == open(path, "rb").read()
    assert err == f"t_calls: offset {os.path.getsize(path) if 'pread' not in method else 0}\n".encode()
    return out


def test_ensure_requests_are_well_formed(preload_built, preload_files, fake_daemon, tmp_path):
    d = fake_daemon("ok")
    f = preload_files["big"]
    drop_cache(f)
    expect_copy(f, lib_env("prefetch+serialize", d.path))
    size, ino = os.path.getsize(f), os.stat(f).st_ino
    assert d.requests, "no ENSURE reached the daemon"
    for r in d.requests:
        assert r["nfds"] == 1 and r["ino"] == ino  # the program's own file, passed along
        assert r["flags"] == 0 and r["prefetch"] == 0  # daemon's choice of size
        assert r["offset"] % 65536 == 0 and 0 < r["length"] <= 65536
        assert r["offset"] + r["length"] <= size
        assert r["call"] == 1  # LC_CALL_PREAD
    # 2 MiB windows: a 3 MiB file needs two, not one per 64 KiB call
    assert len(d.requests) <= 3


def test_serialize_mode_asks_without_prefetch(preload_built, preload_files, fake_daemon):
    d = fake_daemon("ok")
    f = preload_files["big"]
    drop_cache(f)
    expect_copy(f, lib_env("serialize", d.path))
    assert d.requests and all(r["flags"] == 1 and r["length"] <= 65536 for r in d.requests)


def test_configured_prefetch_is_sent(preload_built, preload_files, fake_daemon):
    d = fake_daemon("ok")
    f = preload_files["big"]
    drop_cache(f)
    expect_copy(f, lib_env("prefetch+serialize", d.path, LIBCEPTION_PREFETCH="4M"))
    assert d.requests and all(r["prefetch"] == 4 << 20 for r in d.requests)
    assert len(d.requests) == 1  # one 4 MiB window covers the file


@pytest.mark.parametrize("behaviour,note", [
    ("slow", "timed out"),
    ("close", "closed the connection"),
    ("garbage", "malformed reply"),
    ("badversion", "another protocol version"),
    ("stale", None),
])
@pytest.mark.parametrize("method", ["read", "pread", "sendfile", "splice_off"])
def test_daemon_faults_leave_output_intact(preload_built, preload_files, fake_daemon, tmp_path,
                                           behaviour, note, method):
    d = fake_daemon(behaviour)
    dbg = tmp_path / "debug.log"
    f = preload_files["big"]
    drop_cache(f)
    env = lib_env("prefetch+serialize", d.path, debug=dbg, LIBCEPTION_TIMEOUT_MS=100)
    code, out, err = run([T_CALLS, "copy", method, f, "65536"], env)
    assert code == 0, err
    assert out == open(f, "rb").read()
    assert d.requests, "the library never asked"
    text = dbg.read_text()
    if note:
        assert note in text
    else:
        assert " status 0 " in text  # the stale reply was skipped, the right one used
    if behaviour == "badversion":
        assert len(d.requests) == 1  # then everything passes straight through


def test_www_data_without_cachestat_asks_the_daemon(preload_built, preload_files, fake_daemon,
                                                     tmp_path):
    """A worker that may not cachestat root's files (EPERM) still gets
    prefetching, and the resident window of each reply spares it one IPC
    per call."""
    import pwd
    www = pwd.getpwnam("www-data")
    d = fake_daemon("ok")
    f = preload_files["big"]
    assert os.stat(f).st_uid == 0 and os.stat(f).st_mode & 0o004
    drop_cache(f)
    dbg = tmp_path / "debug.log"
    os.chmod(tmp_path, 0o777)

    def as_www():
        os.setgid(www.pw_gid)
        os.setuid(www.pw_uid)
    env = lib_env("prefetch+serialize", d.path, debug=dbg)
    p = subprocess.run([T_CALLS, "copy", "pread", f, "65536"], env=env, capture_output=True,
                       preexec_fn=as_www, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout == open(f, "rb").read()
    calls, hits = debug_counts(dbg)["pread"]
    assert calls >= 48
    assert 1 <= len(d.requests) <= 3  # one per 2 MiB window
    assert hits >= calls - len(d.requests) - 1  # the rest answered by the hint


def test_program_reusing_our_socket_number_is_untouched(preload_built, preload_files,
                                                        fake_daemon):
    """A program that closes every fd it does not know (daemons do) and gets
    the library's socket number back for its own pipe must never see
    library bytes in it."""
    d = fake_daemon("ok")
    prog = r'''
import os, sys, fcntl
a, b = sys.argv[1], sys.argv[2]
fd = os.open(a, os.O_RDONLY); os.pread(fd, 4096, 0); os.close(fd)   # connects
def is_socket(n):
    try:
        return os.readlink(f"/proc/self/fd/{n}").startswith("socket:")
    except OSError:                                    # listdir's own fd
        return False
ours = [int(n) for n in os.listdir("/proc/self/fd") if is_socket(n)]
assert ours, "the library never connected"
os.closerange(3, 1 << 16)
pipes = [os.pipe() for _ in range(8)]                  # reuse the low numbers
for n in ours:                                         # and the library's own
    r, w = os.pipe()
    os.dup2(r, n)
    os.close(r)
    pipes.append((n, w))
fd = os.open(b, os.O_RDONLY)
data = os.pread(fd, 1 << 20, 0)                        # misses again
leaked = 0
for r, w in pipes:
    fcntl.fcntl(r, fcntl.F_SETFL, os.O_NONBLOCK)
    try:
        leaked += len(os.read(r, 65536))
    except BlockingIOError:
        pass
print(leaked, len(data))
'''
    drop_cache(preload_files["big"])
    drop_cache(preload_files["odd"])
    code, out, err = run([sys.executable, "-c", prog, preload_files["odd"], preload_files["big"]],
                         lib_env("prefetch+serialize", d.path))
    assert code == 0, err
    assert out.split() == [b"0", b"1048576"]
    assert len(d.requests) >= 2  # it reconnected for the second file


def test_program_gets_the_same_fd_numbers(preload_built, preload_files, fake_daemon):
    """open() returns the lowest free number: the library's connection to
    the daemon, made on the first miss, must not take one the program
    would have got."""
    d = fake_daemon("ok")
    prog = r'''
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
os.pread(fd, 4096, 0)                                  # a miss: connects
r, w = os.pipe()
print(fd, os.open(sys.argv[2], os.O_RDONLY), r, w, os.dup(0))
'''
    cmd = [sys.executable, "-c", prog, preload_files["odd"], preload_files["big"]]
    drop_cache(preload_files["odd"])
    lib = run(cmd, lib_env("prefetch+serialize", d.path))
    assert d.requests, "the library never connected"
    assert lib == run(cmd, plain_env())


def test_reports_reach_the_daemon(preload_built, preload_files, fake_daemon):
    d = fake_daemon("ok")
    drop_cache(preload_files["big"])
    expect_copy(preload_files["big"], lib_env("prefetch+serialize", d.path))
    # fields: magic, version, type, id, pid, pad, calls[7], hits[7], bytes[7], hist...
    def preads():
        return sum(r[7] for r in d.reports if r is not None)
    # A periodic report may come first and the exit report still be in the
    # socket (the fake daemon reads it on its own thread): wait for the
    # counts, not for the first report.
    deadline = time.monotonic() + 10
    while preads() < 48 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert d.reports and all(r is not None for r in d.reports)
    calls = [sum(r[6 + i] for r in d.reports) for i in range(7)]
    nbytes = [sum(r[20 + i] for r in d.reports) for i in range(7)]
    assert calls[1] >= 48 and nbytes[1] >= os.path.getsize(preload_files["big"])
    hist_total = sum(sum(r[27 + 28: 27 + 56]) for r in d.reports)  # pread's histogram
    assert hist_total == calls[1]


# ---- the real receptiond -------------------------------------------------

def test_real_daemon_prefetches_for_cat(preload_built, make_daemon, tmp_path):
    d = make_daemon()
    f = write_file(tmp_path / "cold", 12 << 20, seed=7)
    code, out, err = run(["cat", f], d.env(LIBCEPTION_MODE="prefetch+serialize"))
    assert code == 0 and err == b""
    assert out == open(f, "rb").read()
    dev = d.device()
    assert dev["requests"] >= 1
    assert dev["bytes_read"] >= 2 << 20  # enlarged to the prefetch size


def test_real_daemon_killed_and_restarted_mid_cat(preload_built, make_daemon, tmp_path):
    """SIGKILL the daemon while cat is halfway through a cold file, then
    start another on the same socket: cat's output stays byte-identical
    and it goes back to the new daemon after the back-off."""
    from fixtures_daemon import Daemon
    f = write_file(tmp_path / "cold", 48 << 20, seed=8)
    d = make_daemon(name="first")
    env = d.env(LIBCEPTION_MODE="prefetch+serialize", LIBCEPTION_TIMEOUT_MS=2000)
    p = subprocess.Popen(["cat", f], stdout=subprocess.PIPE, env=env)
    d2 = None
    try:
        got = bytearray()
        while len(got) < 8 << 20:
            got += p.stdout.read(1 << 16)
        assert d.device()["requests"] >= 1
        d.kill()  # cat is blocked on the pipe with its daemon gone
        # Dropping the cache makes cat's next read a miss for sure (the
        # kernel's own readahead would otherwise keep ahead of it), so the
        # library meets the dead daemon, then the new one.
        drop_cache(f)
        while len(got) < 12 << 20:
            got += p.stdout.read(1 << 16)
        time.sleep(1.2)  # longer than the library's back-off
        os.unlink(d.path)
        d2 = Daemon(d.dir).start()  # same socket path
        drop_cache(f)
        got += p.stdout.read()
        assert p.wait(timeout=60) == 0
        assert d2.device()["requests"] >= 1, "the library did not come back to the new daemon"
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        if d2:
            d2.kill()
    assert bytes(got) == open(f, "rb").read()


def test_real_daemon_stopped_costs_one_bounded_wait(preload_built, make_daemon, tmp_path):
    """A daemon that stops answering (SIGSTOP) costs the program one wait
    of LIBCEPTION_TIMEOUT_MS, then it goes on with plain libc reads."""
    f = write_file(tmp_path / "cold", 6 << 20, seed=9)
    d = make_daemon()
    dbg = tmp_path / "debug.log"
    d.signal(signal.SIGSTOP)
    try:
        code, out, err = run(["cat", f], d.env(LIBCEPTION_MODE="prefetch+serialize",
                                               LIBCEPTION_TIMEOUT_MS=300,
                                               LIBCEPTION_DEBUG=str(dbg)))
    finally:
        d.signal(signal.SIGCONT)
    assert code == 0 and err == b""
    assert out == open(f, "rb").read()
    assert "timed out" in dbg.read_text()


# ---- cache hits the library finds itself, per device ------------------------

def disk_of(path):
    """The daemon's "disk" for a file: its partition's disk, else its st_dev
    (FUSE, tmpfs...).  Device-mapper stacks are not followed here."""
    dev = os.stat(path).st_dev
    sysdir = f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}"
    if os.path.exists(sysdir):
        real = os.path.realpath(sysdir)
        if os.path.exists(os.path.join(real, "partition")):
            real = os.path.dirname(real)
        with open(os.path.join(real, "dev")) as f:
            return f.read().strip()
    return f"{os.major(dev)}:{os.minor(dev)}"


def stats_when(d, ready, timeout=10):
    """The daemon's stats once ready(stats) holds (reports arrive a moment
    after the program exits), or the last ones seen."""
    deadline = time.monotonic() + timeout
    st = d.stats()
    while not ready(st) and time.monotonic() < deadline:
        time.sleep(0.05)
        st = d.stats()
    return st


def device_on(st, path):
    """The file's disk, among the daemon's devices or the disks only the
    libraries reported (library_devices)."""
    disk = disk_of(path)
    found = [dev for dev in st["devices"] + st["library_devices"] if dev["disk"] == disk]
    assert len(found) == 1, (disk, st["devices"], st["library_devices"])
    return found[0]


def test_library_hits_show_on_the_files_device(preload_built, make_daemon, tmp_path):
    """A program reading a cached file never asks the daemon, yet the
    library's hits appear on that file's device in `libception stats`."""
    d = make_daemon()
    f = write_file(tmp_path / "warm", 3 << 20, seed=11)
    with open(f, "rb") as fh:
        fh.read()  # cached now
    expect_copy(f, d.env(LIBCEPTION_MODE="prefetch+serialize"))
    st = stats_when(d, lambda st: st["calls"]["pread"]["calls"])
    pread = st["calls"]["pread"]
    assert pread["calls"] >= (3 << 20) // 65536 and pread["hits"] == pread["calls"]
    dev = device_on(st, f)
    assert dev["library_hits"] == pread["hits"]
    assert dev["library_calls"] == pread["calls"]
    assert dev["library_hit_bytes"] == pread["bytes"]
    # nothing was asked of the daemon: the disk has no queue of its own
    assert dev in st["library_devices"] and not st["devices"]
    assert st["library_unattributed"]["calls"] == 0
    # a first miss on that disk creates its device, which takes the counts over
    cold = write_file(tmp_path / "cold", 1 << 20, seed=13)
    expect_copy(cold, d.env(LIBCEPTION_MODE="prefetch+serialize"))
    st = stats_when(d, lambda st: st["devices"] and st["calls"]["pread"]["calls"] > pread["calls"])
    dev = device_on(st, f)
    assert dev in st["devices"] and not st["library_devices"]
    assert dev["requests"] >= 1 and dev["library_hits"] >= pread["hits"]


READ_REUSED = """
import os, sys
a, b = sys.argv[1], sys.argv[2]
def reads(fd):
    for i in range(8):
        assert len(os.pread(fd, 4096, i * 4096)) == 4096
fa = os.open(a, os.O_RDONLY); reads(fa); os.close(fa)
fb = os.open(b, os.O_RDONLY); assert fb == fa, (fa, fb); reads(fb)      # same number, b's file
fa2 = os.open(a, os.O_RDONLY); reads(fa2)
fb2 = os.open(b, os.O_RDONLY); os.dup2(fb2, fa2); reads(fa2)            # replaced by dup2
"""


def test_library_hits_follow_a_reused_descriptor(preload_built, make_daemon, tmp_path):
    """A descriptor number closed and reused (or replaced by dup2) for a
    file on another device counts there, not on the first file's device."""
    d = make_daemon()
    a = write_file(tmp_path / "a", 64 << 10, seed=12)
    with open(a, "rb") as fh:
        fh.read()
    b = f"/dev/shm/lc-preload-reuse-{os.getpid()}"
    try:
        with open(b, "wb") as fh:
            fh.write(os.urandom(64 << 10))  # tmpfs: always resident
        assert os.stat(a).st_dev != os.stat(b).st_dev
        code, out, err = run([sys.executable, "-c", READ_REUSED, a, b],
                             d.env(LIBCEPTION_MODE="prefetch+serialize"))
        assert code == 0, err
        st = stats_when(d, lambda st: any(dev["disk"] == disk_of(b)
                                          for dev in st["devices"] + st["library_devices"]))
        dev = device_on(st, b)
        assert (dev["library_calls"], dev["library_hits"]) == (16, 16), dev
        assert dev["library_hit_bytes"] == 16 * 4096
    finally:
        os.unlink(b)


# ---- LIBCEPTION_LOOKAHEAD=1: the next window asked for without waiting -------

MIB = 1 << 20
LA_VIDEO = ("la.mp4", 12 * MIB + 333, 419430, 0)
# 64 KiB preads up to 1.875 MiB: the last quarter of the first 2 MiB window
LA_PAUSE = 30 * 65536

LA_READER = r'''
import hashlib, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
pause = int(sys.argv[2])
h, off = hashlib.sha256(), 0
while True:
    if off == pause:
        print("paused", flush=True)
        sys.stdin.readline()
    b = os.pread(fd, 65536, off)
    if not b:
        break
    h.update(b)
    off += len(b)
print(h.hexdigest(), flush=True)
'''


def read_with_pause(path, env, at_pause):
    """Run LA_READER on path under env; call at_pause() while it waits at
    LA_PAUSE; return its final line."""
    p = subprocess.Popen([sys.executable, "-c", LA_READER, path, str(LA_PAUSE)], env=env,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert p.stdout.readline() == b"paused\n", p.stderr.read()
        at_pause()
        out, err = p.communicate(b"go\n", timeout=120)
        assert p.returncode == 0, err
        return out.decode().strip()
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


@pytest.mark.parametrize("lookahead", [True, False])
def test_lookahead_reads_the_next_window_before_the_reader_asks(
        preload_built, make_daemon, scratch, hddsim_mount, lookahead):
    """On a cold hddsim file, a sequential reader that stops in the last
    quarter of its first window: with LIBCEPTION_LOOKAHEAD=1 the daemon
    reads the next window while the reader is stopped (it asked for
    nothing), and every window after; without it, only the one window the
    reader waited for.  The bytes are the video's either way."""
    import hashlib
    from fixtures_hddsim import content_bytes, write_library
    lib = write_library(scratch / "la.lcvl", [LA_VIDEO])
    m = hddsim_mount(lib, trace=scratch / "trace.txt", read_ahead_kb=128)
    path = os.path.join(m.path, LA_VIDEO[0])
    d = make_daemon()
    extra = {"LIBCEPTION_LOOKAHEAD": 1} if lookahead else {}
    env = d.env(LIBCEPTION_MODE="prefetch+serialize", **extra)

    def at_pause():
        if lookahead:
            st = stats_when(d, lambda st: any(dev["bytes_read"] >= 4 * MIB and dev["lookahead"]
                                              for dev in st["devices"]), timeout=30)
        else:
            st = d.stats()  # the reader's one ENSURE was answered before it went on
        dev = device_on(st, path)
        if lookahead:
            assert dev["lookahead"] >= 1 and dev["bytes_read"] >= 4 * MIB, dev
        else:
            assert dev["lookahead"] == 0 and dev["bytes_read"] < 4 * MIB, dev

    digest = read_with_pause(path, env, at_pause)
    assert digest == hashlib.sha256(content_bytes(LA_VIDEO[0], 0, LA_VIDEO[1])).hexdigest()
    dev = device_on(d.stats(), path)
    if lookahead:
        # one look-ahead per window after the first, give or take the
        # ones the reader caught up with
        assert dev["lookahead"] >= 3 and dev["busy_rejected"] == 0, dev
    else:
        assert dev["lookahead"] == 0, dev


def test_lookahead_answers_from_an_old_daemon_are_dropped(preload_built, preload_files,
                                                           fake_daemon):
    """The stand-in answers look-aheads too, as a daemon that predates
    LC_F_LOOKAHEAD would: the library sends them flagged, at window
    boundaries, and drops their answers by id; the copy stays exact."""
    d = fake_daemon("ok")
    f = preload_files["big"]
    drop_cache(f)
    expect_copy(f, lib_env("prefetch+serialize", d.path, LIBCEPTION_LOOKAHEAD="1"))
    ahead = [r for r in d.requests if r["flags"] == 2]
    assert ahead, d.requests
    for r in ahead:
        assert r["nfds"] == 1 and r["offset"] % (2 << 20) == 0 and r["length"] > 0
        assert r["offset"] + r["length"] <= os.path.getsize(f)
    assert all(r["flags"] in (0, 2) for r in d.requests)


def test_lookahead_needs_prefetch_serialize_mode(preload_built, preload_files, fake_daemon):
    """In serialize mode there is no window to look past: no look-ahead."""
    d = fake_daemon("ok")
    f = preload_files["big"]
    drop_cache(f)
    expect_copy(f, lib_env("serialize", d.path, LIBCEPTION_LOOKAHEAD="1"))
    assert d.requests and all(r["flags"] == 1 for r in d.requests)
