"""receptiond really prefetches: misses are enlarged to the prefetch size,
clipped at end of file, cached pieces are skipped, hits are answered
without I/O, overlapping requests are merged and one device serves one
read at a time."""
import os
import signal
import subprocess
import threading

import pytest

from fixtures_common import cached_pages, drop_cache, reader_cmd, sha256_of
from fixtures_daemon import make_cold_file
from libception import daemon as lcd

MiB = 1 << 20
PAGE = os.sysconf("SC_PAGE_SIZE")


def ensure(d, path, off, length, **kw):
    fd = os.open(path, os.O_RDONLY)
    try:
        with d.connect() as s:
            return lcd.ensure(s, fd, off, length, **kw)
    finally:
        os.close(fd)


def test_miss_is_enlarged_to_the_prefetch_size(receptiond, scratch):
    f = make_cold_file(str(scratch / "cold"), 8 * MiB)
    assert cached_pages(f) == 0
    r = ensure(receptiond, f, 4096, 4096)
    assert r["status"] == lcd.ST_OK and not r["was_resident"]
    assert (r["resident_offset"], r["resident_length"]) == (4096, 2 * MiB)
    assert r["bytes_read"] == 2 * MiB
    # The window is in the page cache, and nothing past it was read.
    assert cached_pages(f, 4096, 2 * MiB) == 2 * MiB // PAGE
    assert cached_pages(f, 4096 + 2 * MiB + PAGE, 2 * MiB) == 0
    dev = receptiond.device()
    assert dev["requests"] == 1 and dev["reads"] == 1 and dev["bytes_read"] == 2 * MiB
    assert dev["bytes_asked"] == 4096


def test_prefetched_pages_wait_on_the_inactive_list(make_daemon, harness_cgroup, scratch,
                                                   need_library):
    # The daemon's prefetch must not count as an access: the program's
    # one read of a page is then its first, the page stays on the
    # inactive list as without libception, and under memory pressure the
    # kernel evicts pages already sent before windows not yet read.  (A
    # pread by the daemon made every page read once by the program
    # "active": all 32 MiB here.)
    group = harness_cgroup(None)
    d = make_daemon(start=False)
    d.start(preexec=group.preexec)  # the daemon's reads are charged to the group
    f = make_cold_file(str(scratch / "cold"), 32 * MiB)
    subprocess.run(["cat", f], env=d.env(), stdout=subprocess.DEVNULL, check=True,
                   preexec_fn=group.preexec)
    # The daemon read most of the file (other tests count its reads
    # exactly; here a page the kernel read for cat is read once too, and
    # stays inactive either way, so the lists below are the claim).
    dev = d.device()
    assert dev["bytes_read"] >= 16 * MiB, dev
    st = group.stat()
    assert st["total_inactive_file"] >= 30 * MiB
    assert st["total_active_file"] <= 2 * MiB
    drop_cache(f)


def test_hit_is_answered_from_the_cache(receptiond, scratch):
    f = make_cold_file(str(scratch / "cold"), 8 * MiB)
    ensure(receptiond, f, 0, 4096)
    r = ensure(receptiond, f, 64 * 1024, 4096)
    assert r["was_resident"] and r["bytes_read"] == 0
    # The reply names the cached run from the request on (up to the window).
    assert r["resident_offset"] == 64 * 1024
    assert r["resident_length"] == 2 * MiB - 64 * 1024
    dev = receptiond.device()
    assert dev["hits"] == 1 and dev["reads"] == 1 and dev["bytes_read"] == 2 * MiB


def test_window_is_clipped_at_end_of_file(receptiond, scratch):
    f = make_cold_file(str(scratch / "short"), 3 * MiB)
    r = ensure(receptiond, f, 2 * MiB + MiB // 2, 4096)
    assert r["resident_offset"] + r["resident_length"] == 3 * MiB
    assert r["bytes_read"] == MiB // 2
    assert ensure(receptiond, f, 3 * MiB, 4096)["bytes_read"] == 0   # at EOF: nothing to do


def test_cached_pieces_are_skipped(receptiond, scratch):
    f = make_cold_file(str(scratch / "half"), 8 * MiB)
    with open(f, "rb") as fh:            # the program already read the second MiB
        os.posix_fadvise(fh.fileno(), 0, 0, os.POSIX_FADV_RANDOM)
        os.pread(fh.fileno(), MiB, MiB)
    assert cached_pages(f, MiB, MiB) == MiB // PAGE
    r = ensure(receptiond, f, 0, 4096)
    assert r["resident_length"] == 2 * MiB and r["bytes_read"] == MiB


def test_window_starts_at_the_first_page_not_cached(receptiond, scratch):
    """A miss whose range begins in cached pages (the end of an earlier
    window) gets a whole window from the first missing page, so the disk
    reads a full window rather than the fragment up to the old one's end.
    The answer still vouches for the request's cached start."""
    f = make_cold_file(str(scratch / "tail"), 8 * MiB)
    with open(f, "rb") as fh:            # an earlier window ended at 1.5 MiB
        os.posix_fadvise(fh.fileno(), 0, 0, os.POSIX_FADV_RANDOM)
        os.pread(fh.fileno(), MiB + MiB // 2, 0)
    r = ensure(receptiond, f, MiB, MiB)
    assert r["status"] == lcd.ST_OK and not r["was_resident"]
    assert r["bytes_read"] == 2 * MiB
    assert (r["resident_offset"], r["resident_length"]) == (MiB, MiB // 2 + 2 * MiB)
    assert cached_pages(f, 0, 3 * MiB + MiB // 2) == (3 * MiB + MiB // 2) // PAGE
    assert cached_pages(f, 3 * MiB + MiB // 2 + PAGE, MiB) == 0


def test_prefetch_sizes(make_daemon, scratch):
    d = make_daemon(["--prefetch", "512K"])
    f = make_cold_file(str(scratch / "cold"), 16 * MiB)
    assert ensure(d, f, 0, 4096)["bytes_read"] == 512 * 1024
    # the library's own size wins (LIBCEPTION_PREFETCH)
    assert ensure(d, f, 4 * MiB, 4096, prefetch=3 * MiB)["bytes_read"] == 3 * MiB
    # serialize mode: exactly the range asked for
    r = ensure(d, f, 10 * MiB, 8192, flags=lcd.F_NO_PREFETCH)
    assert (r["resident_length"], r["bytes_read"]) == (8192, 8192)
    assert cached_pages(f, 10 * MiB + 8192, MiB) == 0
    # a request larger than the prefetch size is read whole
    assert ensure(d, f, 12 * MiB, 2 * MiB)["bytes_read"] == 2 * MiB


def test_fixed_policy_argument(make_daemon, scratch):
    d = make_daemon(["--policy", "fixed:1M"])
    f = make_cold_file(str(scratch / "cold"), 8 * MiB)
    assert ensure(d, f, 0, 4096)["bytes_read"] == MiB
    pol = d.device()["policy"]
    assert pol["name"] == "fixed" and pol["size"] == MiB


def test_overlapping_requests_are_merged(receptiond, scratch):
    """Two clients ask for overlapping ranges of one cold file while the
    device is busy: the file is read once and both are answered."""
    busy = make_cold_file(str(scratch / "busy"), 64 * MiB, seed=2)
    f = make_cold_file(str(scratch / "shared"), 8 * MiB, seed=3)
    fds = [os.open(busy, os.O_RDONLY), os.open(f, os.O_RDONLY), os.open(f, os.O_RDONLY)]
    socks = [receptiond.connect() for _ in fds]
    try:
        # Stop the daemon so all three are waiting in their sockets when
        # it resumes: the 64 MiB read keeps the worker busy meanwhile.
        receptiond.signal(signal.SIGSTOP)
        lcd.send_msg(socks[0], lcd.pack_ensure(0, 64 * MiB, req_id=1), [fds[0]])
        lcd.send_msg(socks[1], lcd.pack_ensure(0, 8192, req_id=2), [fds[1]])
        lcd.send_msg(socks[2], lcd.pack_ensure(4096, 65536, req_id=3), [fds[2]])
        receptiond.signal(signal.SIGCONT)
        replies = [lcd.recv_ensure_reply(s) for s in socks]
    finally:
        receptiond.signal(signal.SIGCONT)
        for s in socks:
            s.close()
        for fd in fds:
            os.close(fd)
    assert [r["status"] for r in replies] == [lcd.ST_OK] * 3
    for r, (off, length) in zip(replies[1:], [(0, 8192), (4096, 65536)]):
        assert r["resident_offset"] <= off
        assert r["resident_offset"] + r["resident_length"] >= off + length
    dev = receptiond.device()
    assert dev["merged"] == 1 and dev["reads"] == 2
    assert dev["bytes_read"] == 64 * MiB + 2 * MiB


def ensure_windows(d, path, windows, errors):
    """One client thread: ENSURE the first 4 KiB of each of the first
    `windows` 2 MiB windows of a cold file, each of which the daemon must
    read whole.  Failures go to `errors` (a thread cannot fail the test)."""
    try:
        fd = os.open(path, os.O_RDONLY)
        with d.connect() as s:
            for k in range(windows):
                r = lcd.ensure(s, fd, k * 2 * MiB, 4096, req_id=k + 1)
                assert r["status"] == lcd.ST_OK and r["bytes_read"] == 2 * MiB, r
        os.close(fd)
    except Exception as e:  # noqa: BLE001 - reported by the test
        errors.append(e)


def test_one_read_at_a_time_per_device(receptiond, scratch):
    """Eight clients at once on one device: requests queue up (the queue
    held several) but never more than one read runs."""
    files = [make_cold_file(str(scratch / f"f{i}"), 16 * MiB, seed=i) for i in range(8)]
    errors = []
    threads = [threading.Thread(target=ensure_windows, args=(receptiond, p, 8, errors))
               for p in files]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    dev = receptiond.device()
    assert dev["reads"] == 64 and dev["bytes_read"] == 128 * MiB
    assert dev["inflight_max"] == 1
    assert dev["queue_max"] >= 2, "the clients never overlapped; the test proved nothing"
    assert dev["wait_us"]["count"] == 64 and dev["service_us"]["count"] == 64


def test_memory_file_systems_get_no_device(receptiond, scratch):
    """A file on tmpfs has no disk to prefetch from: it is answered
    DIRECT without a device (its own queue is a disk's privilege;
    test_daemon_isolation.py runs a FUSE device beside the disk)."""
    disk = make_cold_file(str(scratch / "disk"), 4 * MiB)
    shm_dir = "/dev/shm"
    if not os.path.isdir(shm_dir):
        pytest.skip("no /dev/shm")
    shm = os.path.join(shm_dir, f"lc-daemon-test-{os.getpid()}")
    try:
        with open(shm, "wb") as fh:
            fh.write(b"x" * MiB)
        assert ensure(receptiond, disk, 0, 4096)["status"] == lcd.ST_OK
        assert ensure(receptiond, shm, 0, 4096)["status"] == lcd.ST_DIRECT
        st = receptiond.stats()
    finally:
        os.unlink(shm)
    assert len(st["devices"]) == 1, st["devices"]
    assert st["direct_fs"] == 1


COUNTERS = ("requests", "reads", "bytes_read")


def counters(d):
    devs = d.stats()["devices"]
    return {k: sum(x[k] for x in devs) for k in COUNTERS}


def delta(d, before):
    now = counters(d)
    return {k: now[k] - before[k] for k in COUNTERS}


def start_readers(d, files, pause=False):
    """Start READER on each file; returns (procs, baseline counters) once
    all are ready to read."""
    procs = [subprocess.Popen(reader_cmd(f, "ready", "random", *(["pause"] if pause else [])),
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                              env=d.env()) for f in files]
    for p in procs:
        assert p.stdout.readline().strip() == "ready"
    return procs, counters(d)


def test_program_under_libception_gets_prefetching(need_library, receptiond, scratch):
    """A program reading a cold file 4 KiB at a time: after its first read
    the first prefetch window is resident; the daemon reads the whole file
    in prefetch-size windows and the program's output is unchanged."""
    f = make_cold_file(str(scratch / "video"), 16 * MiB)
    want = sha256_of(f)
    drop_cache(f)
    (p,), before = start_readers(receptiond, [f], pause=True)
    try:
        p.stdin.write("go\n")
        p.stdin.flush()
        assert p.stdout.readline().strip() == "first"
        assert cached_pages(f, 0, 2 * MiB) == 2 * MiB // PAGE
        assert cached_pages(f, 2 * MiB, 0) == 0
        out, _ = p.communicate("go\n", timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0 and out.strip() == want
    assert delta(receptiond, before) == {"requests": 8, "reads": 8, "bytes_read": 16 * MiB}
    # the library reported its calls
    st = receptiond.stats()
    assert st["calls"]["read"]["calls"] >= 16 * MiB // 4096


def test_two_programs_are_serialized(need_library, receptiond, scratch):
    files = [make_cold_file(str(scratch / f"v{i}"), 32 * MiB, seed=i) for i in range(2)]
    want = [sha256_of(f) for f in files]
    for f in files:
        drop_cache(f)
    procs, before = start_readers(receptiond, files)
    outs = [p.communicate("go\n", timeout=120)[0].strip() for p in procs]
    assert outs == want
    got = delta(receptiond, before)
    # Every window read once.  On a loaded machine the kernel may drop a
    # freshly read folio before the program gets to it, which costs one
    # more read of that folio: at most one per file, each at most 2 MiB
    # (ext4 caches in large folios; the daemon's hints make 256 KiB ones).
    assert 32 <= got["requests"] <= 34 and 32 <= got["reads"] <= 34, got
    assert 64 * MiB <= got["bytes_read"] <= 64 * MiB + (got["reads"] - 32) * 2 * MiB, got
    assert all(d["inflight_max"] == 1 for d in receptiond.stats()["devices"])


def test_parallel_reads_when_the_policy_allows(make_daemon, scratch):
    """A policy may let a device run several reads at once (flash); the
    daemon then starts that many workers and they overlap."""
    d = make_daemon(["--policy", "fixed:2M,parallel=4"])
    files = [make_cold_file(str(scratch / f"p{i}"), 32 * MiB, seed=i) for i in range(8)]
    errors = []
    # Stop the daemon while the clients queue up so the workers find a
    # full queue when it resumes.
    d.signal(signal.SIGSTOP)
    threads = [threading.Thread(target=ensure_windows, args=(d, p, 16, errors)) for p in files]
    try:
        for t in threads:
            t.start()
        import time
        time.sleep(0.2)
    finally:
        d.signal(signal.SIGCONT)
    for t in threads:
        t.join()
    assert not errors, errors
    dev = d.device()
    assert dev["workers"] == 4 and dev["policy"]["concurrency"] == 4
    assert dev["reads"] == 128 and dev["bytes_read"] == 256 * MiB
    assert 2 <= dev["inflight_max"] <= 4
