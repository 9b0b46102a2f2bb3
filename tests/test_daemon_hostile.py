"""receptiond against hostile local users, one test per row of issue 25
that is not about access (test_daemon_access.py) or limits
(test_daemon_limits.py): leaked descriptors, running out of them, unread
replies, closes that hang, memory "prefetched" into RAM, devices and
threads per file system, log floods, the hit check, and the library's
own descriptors."""
import os
import resource
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from conftest import LIBCEPTION_SO
from fixtures_common import cached_pages, cachestat_fd, write_library
from fixtures_daemon import make_cold_file
from fixtures_hostile import (NOBODY, proc_cpu_s, proc_fds, proc_threads, run_as, settle)
from libception import daemon as lcd

MiB = 1 << 20
STATS_MSG = lcd.HEADER.pack(lcd.MAGIC, lcd.VERSION, lcd.MSG_STATS, 7)
SHUTDOWN_MSG = lcd.HEADER.pack(lcd.MAGIC, lcd.VERSION, lcd.MSG_SHUTDOWN, 9)


def served_normally(d, path):
    """A well-formed ENSURE on a new connection is answered within 5 s (a
    stall of seconds fails it; this bounds correctness, not speed)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        with lcd.connect(d.path, timeout=5) as s:
            r = lcd.ensure(s, fd, 0, 4096, req_id=4242)
    finally:
        os.close(fd)
    assert r["status"] == lcd.ST_OK, r
    return r


@pytest.fixture
def disk_file(scratch):
    return make_cold_file(str(scratch / "disk"), 4 * MiB)


def test_empty_messages_do_not_leak_descriptors(receptiond, disk_file):
    """Row 2: a zero-length message carrying descriptors (read as the end
    of the connection by the old daemon, which left its fds open).  200 in
    all, below the user's 256 pending closes, so every message is read."""
    base = proc_fds(receptiond.proc.pid)
    fds = [os.open(disk_file, os.O_RDONLY) for _ in range(2)]
    try:
        for _ in range(100):
            with receptiond.connect() as s:
                lcd.send_msg(s, b"", fds)
    finally:
        for fd in fds:
            os.close(fd)
    # The fds are in the daemon's table once it has read the messages.
    settle(lambda: receptiond.stats()["malformed"], lambda n: n >= 100)
    after = settle(lambda: proc_fds(receptiond.proc.pid), lambda n: n <= base + 2)
    assert after <= base + 2, f"{after - base} descriptors kept of 200 sent"
    assert receptiond.stats()["malformed"] == 100
    served_normally(receptiond, disk_file)


def test_out_of_descriptors_pauses_accepting(make_daemon, scratch, hddsim_mount, disk_file):
    """Row 2: with its descriptors all taken (misses queued on a stopped
    FUSE server hold them), the daemon must not spin on a backlog it cannot
    accept (the old one burnt a core), and serves again once they free."""
    lib = write_library(scratch / "h.lcvl", [("v.mp4", 64 * MiB, 419430, 0)])
    m = hddsim_mount(lib, name="emfile", read_ahead_kb=0)
    fuse_fd = os.open(os.path.join(m.path, "v.mp4"), os.O_RDONLY)
    d = make_daemon(start=False)
    d.start(preexec=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (48, 48)))
    pid = d.proc.pid
    conns, extra = [], []
    os.kill(m.pid, signal.SIGSTOP)
    try:
        first = d.connect()
        lcd.send_msg(first, lcd.pack_ensure(62 * MiB, 4096, req_id=1), [fuse_fd])
        conns.append(first)
        for i in range(16):
            try:
                s = d.connect()
                for k in range(8):
                    lcd.send_msg(s, lcd.pack_ensure((i * 8 + k) * 384 << 10, 4096, req_id=k + 2),
                                 [fuse_fd])
            except OSError:
                break
            conns.append(s)
        settle(lambda: proc_fds(pid), lambda n: n >= 46, timeout=10)
        for _ in range(5):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            s.setblocking(False)
            try:
                s.connect(d.path)
            except OSError:
                pass
            extra.append(s)
        time.sleep(0.5)
        cpu0 = proc_cpu_s(pid)
        time.sleep(2.0)
        spent = proc_cpu_s(pid) - cpu0
        assert spent < 0.5, f"the daemon spent {spent:.2f} s of CPU in 2 s out of descriptors"
    finally:
        os.kill(m.pid, signal.SIGCONT)
        for s in conns + extra:
            s.close()
    settle(lambda: proc_fds(pid), lambda n: n < 30, timeout=60)
    served_normally(d, disk_file)
    assert d.stats()["connections"]["accept_paused"] >= 1
    os.close(fuse_fd)


def test_unread_stats_replies_do_not_stall_the_daemon(receptiond, disk_file):
    """Row 3: clients that ask for statistics and never read the answer
    (the old daemon retried each chunk for 1 s on the main thread once the
    socket buffer, ~200 KiB, was full)."""
    hogs = []
    try:
        for _ in range(5):
            s = receptiond.connect()
            s.setblocking(False)
            for _ in range(300):
                try:
                    s.send(STATS_MSG)
                except OSError:   # the daemon stopped reading us: it has a reply for us
                    break
            hogs.append(s)
        served_normally(receptiond, disk_file)
        st = settle(receptiond.stats, lambda st: st["connections"]["slow_dropped"] >= 5)
        assert st["connections"]["slow_dropped"] >= 5
    finally:
        for s in hogs:
            s.close()
    assert receptiond.stats()["connections"]["now"] == 1


def test_a_hung_fuse_close_freezes_nothing(receptiond, scratch, hddsim_mount, disk_file):
    """Row 4: closing a passed descriptor of a FUSE file sends FLUSH and
    waits for the server; with the server stopped, the old daemon's main
    thread froze (SIGTERM included)."""
    lib = write_library(scratch / "f.lcvl", [("v.mp4", 8 * MiB, 419430, 0)])
    m = hddsim_mount(lib, name="flush", read_ahead_kb=0)
    fuse_fd = os.open(os.path.join(m.path, "v.mp4"), os.O_RDONLY)
    os.kill(m.pid, signal.SIGSTOP)
    try:
        with receptiond.connect() as s:
            # Malformed (STATS carries no fd): the fd is closed at once.
            lcd.send_msg(s, STATS_MSG, [fuse_fd])
        time.sleep(0.3)
        served_normally(receptiond, disk_file)
        assert lcd.stats(receptiond.path, timeout=5)["connections"]["closes_pending"] >= 1
        receptiond.signal(signal.SIGTERM)
        settle(receptiond.log_text, lambda t: "exited" in t, timeout=15)
        assert "signal 15: exiting" in receptiond.log_text()
        assert "exited" in receptiond.log_text()
    finally:
        os.kill(m.pid, signal.SIGCONT)
    assert receptiond.proc.wait(timeout=30) == 0
    os.close(fuse_fd)


def test_memory_files_are_not_prefetched(receptiond):
    """Row 5: a 1 TiB memfd (and /proc, sysfs): answered DIRECT, nothing
    read into RAM, no device."""
    fd = os.memfd_create("lc-hostile")
    os.ftruncate(fd, 1 << 40)
    proc = os.open("/proc/self/status", os.O_RDONLY)
    sysfs = os.open("/sys/kernel/mm/transparent_hugepage/enabled", os.O_RDONLY) \
        if os.path.exists("/sys/kernel/mm/transparent_hugepage/enabled") else None
    try:
        with receptiond.connect() as s:
            for k in range(4):
                r = lcd.ensure(s, fd, k << 30, 4096, req_id=k + 1, prefetch=64 * MiB)
                assert r["status"] == lcd.ST_DIRECT, r
            assert lcd.ensure(s, proc, 0, 4096, req_id=10)["status"] == lcd.ST_DIRECT
            if sysfs is not None:
                assert lcd.ensure(s, sysfs, 0, 4096, req_id=11)["status"] == lcd.ST_DIRECT
        assert cachestat_fd(fd, 0, 1 << 40).nr_cache == 0
        st = receptiond.stats()
        assert st["devices"] == [], st["devices"]
        assert st["direct_fs"] == 5 + (sysfs is not None)
    finally:
        os.close(fd)
        os.close(proc)
        if sysfs is not None:
            os.close(sysfs)


PRIVATE_MOUNTS = textwrap.dedent("""
    import os, subprocess, sys
    sys.path.insert(0, sys.argv[3])
    from libception import daemon as lcd
    base, n = sys.argv[2], 20
    with lcd.connect(sys.argv[1]) as s:
        for i in range(n):
            d = os.path.join(base, f"m{i}")
            os.makedirs(d, exist_ok=True)
            subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "lc-private", d], check=True)
            with open(os.path.join(d, "f"), "wb") as f:
                f.write(b"x" * (1 << 20))
            fd = os.open(os.path.join(d, "f"), os.O_RDONLY)
            r = lcd.ensure(s, fd, 0, 4096, req_id=i + 1)
            os.close(fd)
            print(r["status_name"])
""")


def test_private_mounts_make_no_devices_or_threads(receptiond, scratch):
    """Row 7: file systems in another mount namespace (300 tmpfs mounts
    made 301 threads): no device, no thread."""
    pid = receptiond.proc.pid
    base = proc_threads(pid)
    harness = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "harness")
    r = subprocess.run(["unshare", "-m", "--propagation", "private", sys.executable, "-c",
                        PRIVATE_MOUNTS, receptiond.path, str(scratch), harness],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["direct"] * 20
    assert receptiond.stats()["devices"] == []
    # Closer threads come and go (5 s idle); none is left for long.
    assert settle(lambda: proc_threads(pid), lambda n: n <= base, timeout=20) <= base


def test_idle_device_workers_exit_and_free_their_place(make_daemon, scratch, hddsim_mount,
                                                       disk_file):
    """Row 7: a device's worker exits after --device-idle; with the table
    full (--max-devices 1) a new device waits for an idle one's place."""
    d = make_daemon(["--device-idle", "1", "--max-devices", "1"])
    pid = d.proc.pid
    base = proc_threads(pid)
    served_normally(d, disk_file)
    lib = write_library(scratch / "i.lcvl", [("v.mp4", 8 * MiB, 419430, 0)])
    m = hddsim_mount(lib, name="idle", read_ahead_kb=0)
    fuse = os.path.join(m.path, "v.mp4")
    fd = os.open(fuse, os.O_RDONLY)
    try:
        with d.connect() as s:
            r = lcd.ensure(s, fd, 0, 4096, req_id=1)
            if r["status"] == lcd.ST_BUSY:   # the disk's worker was still there
                assert [x["name"] for x in d.stats()["devices"]] == ["vda"] or \
                    len(d.stats()["devices"]) == 1
        assert settle(lambda: proc_threads(pid), lambda n: n <= base, timeout=20) <= base
        with d.connect() as s:
            r = lcd.ensure(s, fd, 0, 4096, req_id=2)
        assert r["status"] == lcd.ST_OK, r
        names = [x["name"] for x in d.stats()["devices"]]
        assert len(names) == 1 and names[0].startswith("fuse-"), names
        assert "idle, freed to make room" in d.log_text()
        # The disk comes back the same way, and is served.
        assert settle(lambda: proc_threads(pid), lambda n: n <= base, timeout=20) <= base
        served_normally(d, disk_file)
    finally:
        os.close(fd)


def test_log_floods_are_rate_limited(receptiond, disk_file):
    """Row 8: "shutdown refused" and "too much malformed input" were
    logged once per message (73 MB of log in 5 s)."""
    t0 = time.monotonic()

    def flood():
        with lcd.connect(receptiond.path) as s:
            s.setblocking(False)
            for _ in range(3000):
                try:
                    s.send(SHUTDOWN_MSG)
                except BlockingIOError:
                    time.sleep(0.001)
        for _ in range(300):
            with lcd.connect(receptiond.path) as s:
                for _ in range(16):
                    s.send(b"junk")
        return True

    run_as(NOBODY, flood)
    elapsed = time.monotonic() - t0
    served_normally(receptiond, disk_file)
    text = receptiond.log_text()
    budget = 20 * (int(elapsed) + 2)      # 20 lines a second per kind of line
    assert text.count("shutdown refused") <= budget, text.count("shutdown refused")
    assert text.count("too much malformed input") <= budget


def test_hit_check_is_clamped_to_one_window(receptiond, scratch):
    """Row 9: a client's prefetch size of 1 GiB made the daemon cachestat
    the whole cached file on its main thread; a check never looks past
    one window (64 MiB)."""
    f = str(scratch / "sparse")
    with open(f, "wb") as fh:
        fh.truncate(96 * MiB)
    fd = os.open(f, os.O_RDONLY)
    try:
        for _ in range(5):      # others' cache drops on a shared machine: try again
            with open(f, "rb") as fh:
                while fh.read(8 * MiB):
                    pass
            with receptiond.connect() as s:
                r = lcd.ensure(s, fd, 0, 4096, prefetch=1 << 30)
            if cached_pages(f) == 96 * MiB // 4096:
                break
    finally:
        os.close(fd)
    assert cached_pages(f) == 96 * MiB // 4096
    assert r["was_resident"] and r["resident_offset"] == 0
    assert r["resident_length"] == 64 * MiB, r


FD_HUNGRY = textwrap.dedent("""
    import os, sys
    n = 0
    try:
        while True:
            fd = os.open(sys.argv[1 + n % (len(sys.argv) - 1)], os.O_RDONLY)
            os.read(fd, 4096)
            n += 1
    except OSError:
        pass
    print(n)
""")


def test_library_takes_no_descriptor_under_a_low_fd_limit(receptiond, scratch, need_library):
    """Row 11: under RLIMIT_NOFILE 32 a program opens as many files with
    the library as without (its socket took one)."""
    files = [make_cold_file(str(scratch / f"c{i}"), 64 << 10, seed=i) for i in range(4)]

    def count(env):
        r = subprocess.run([sys.executable, "-c", FD_HUNGRY] + files, env=env,
                           capture_output=True, text=True, timeout=60, check=True,
                           preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (32, 32)))
        return int(r.stdout)
    plain = count(dict(os.environ))
    for f in files:
        make_cold_file(f, 64 << 10)
    assert count(receptiond.env()) == plain


THREADS = textwrap.dedent("""
    import os, sys, threading
    files = sys.argv[1:]
    ready = threading.Barrier(len(files) + 1)
    done = threading.Event()
    def reader(path):
        fd = os.open(path, os.O_RDONLY)
        os.read(fd, 4096)
        ready.wait()
        done.wait()
        os.close(fd)
    ts = [threading.Thread(target=reader, args=(f,)) for f in files]
    for t in ts:
        t.start()
    ready.wait()
    print("ready", flush=True)
    sys.stdin.readline()
    done.set()
    for t in ts:
        t.join()
""")


def test_library_sockets_stay_under_a_share_of_the_fd_limit(receptiond, scratch, need_library):
    """Row 11: 48 threads missing at once under RLIMIT_NOFILE 512 hold at
    most 512/16 = 32 sockets; the others pass their calls through."""
    files = [make_cold_file(str(scratch / f"t{i}"), 64 << 10, seed=i) for i in range(48)]
    p = subprocess.Popen([sys.executable, "-c", THREADS] + files, env=receptiond.env(),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                         preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (512, 512)))
    try:
        assert p.stdout.readline().strip() == "ready"
        now = receptiond.stats()["connections"]["now"] - 1   # ours
        assert 1 <= now <= 32, now
    finally:
        p.stdin.write("\n")
        p.stdin.close()
        p.wait(timeout=60)
