"""Per-user limits of receptiond (docs/libception-security.md "Limits per user"):
one user's connections, queued misses, queued bytes and pending closes
cannot take what the others need; and the fairness bound of issue 25: a
flood of 64 MiB windows from one user leaves another user's cold misses
within a bound of their unloaded wait.  Attackers run as nobody."""
import os
import signal
import statistics
import threading
import time

import pytest

from fixtures_common import write_library
from fixtures_daemon import make_cold_file
from fixtures_hostile import NOBODY, run_as, settle
from libception import daemon as lcd

MiB = 1 << 20
GiB = 1 << 30


@pytest.fixture
def stopped_fuse(scratch, hddsim_mount):
    """An open fd of a 2 GiB file on an hddsim mount whose server is
    stopped (every read of it waits), resumed and closed after the test."""
    lib = write_library(scratch / "l.lcvl", [("v.mp4", 2 * GiB, 419430, 0)])
    m = hddsim_mount(lib, name="stopped", read_ahead_kb=0)
    fd = os.open(os.path.join(m.path, "v.mp4"), os.O_RDONLY)
    os.kill(m.pid, signal.SIGSTOP)
    try:
        yield fd
    finally:
        os.kill(m.pid, signal.SIGCONT)
        os.close(fd)


def ensures_as_nobody(path, fd, offsets, per_conn=8, prefetch=0):
    """As nobody: ENSUREs of fd at offsets, per_conn per connection, none
    waited for but the answers that come at once; returns how many were
    answered BUSY within a second."""
    def flood():
        conns, busy = [], 0
        for i in range(0, len(offsets), per_conn):
            s = lcd.connect(path)
            for k, off in enumerate(offsets[i:i + per_conn]):
                lcd.send_msg(s, lcd.pack_ensure(off, 4096, req_id=k + 1, prefetch=prefetch), [fd])
            conns.append(s)
        deadline = time.monotonic() + 1.0
        for s in conns:
            s.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                while True:
                    data = s.recv(4096)
                    if not data:
                        break
                    busy += lcd.ENSURE_REPLY.unpack(data)[4] == lcd.ST_BUSY
            except OSError:
                pass
        return busy
    return run_as(NOBODY, flood)


def test_connections_per_user(receptiond, scratch):
    """nobody's 300 idle connections: 256 kept, the rest closed; root and
    www-data still connect (4,096 of one user locked everyone out)."""
    target = make_cold_file(str(scratch / "t"), 4 * MiB)
    result = {}

    def hog():
        socks = [lcd.connect(receptiond.path) for _ in range(300)]
        time.sleep(1.0)
        closed = 0
        for s in socks:
            s.setblocking(False)
            try:
                closed += s.recv(1, socket_peek()) == b""
            except BlockingIOError:
                pass
        time.sleep(2.0)
        return closed

    t = threading.Thread(target=lambda: result.update(closed=run_as(NOBODY, hog)))
    t.start()
    try:
        settle(lambda: receptiond.stats()["connections"]["refused"], lambda n: n >= 44)
        st = receptiond.stats()
        assert st["connections"]["refused"] >= 44
        fd = os.open(target, os.O_RDONLY)
        with receptiond.connect() as s:
            assert lcd.ensure(s, fd, 0, 4096)["status"] == lcd.ST_OK
        os.close(fd)
        assert run_as(33, lambda: lcd.stats(receptiond.path)["pid"]) == receptiond.proc.pid
    finally:
        t.join(30)
    assert result["closed"] == 300 - 256


def socket_peek():
    import socket
    return socket.MSG_PEEK


def test_queued_misses_per_user(receptiond, stopped_fuse):
    """nobody queues 100 misses on a stalled device: the 65th on are
    answered BUSY; another user's miss still queues (waits, not BUSY)."""
    offsets = [1 * GiB] + [(k + 1) * 4 * MiB for k in range(99)]
    busy = ensures_as_nobody(receptiond.path, stopped_fuse, offsets)
    assert busy >= 100 - 64, busy
    with receptiond.connect() as s:
        lcd.send_msg(s, lcd.pack_ensure(1536 * MiB, 4096, req_id=5), [stopped_fuse])
        s.settimeout(0.5)
        with pytest.raises(OSError):
            s.recv(4096)        # queued behind the stalled read, not refused


def test_queued_bytes_per_user(receptiond, stopped_fuse):
    """Windows of 64 MiB: nobody's 40 queued misses would read 2.5 GiB;
    1 GiB of them is taken, the rest answered BUSY."""
    offsets = [k * 48 * MiB for k in range(40)]
    busy = ensures_as_nobody(receptiond.path, stopped_fuse, offsets, prefetch=64 * MiB)
    assert busy >= 40 - 16 - 1, busy
    assert busy <= 40 - 15, busy


def test_pending_closes_per_user(receptiond, stopped_fuse, scratch):
    """300 messages carrying a FUSE fd whose close hangs: the user's
    pending closes stop at its limit (its connections are cut), and root
    is served meanwhile."""
    target = make_cold_file(str(scratch / "t"), 4 * MiB)

    def flood():
        stats_msg = lcd.HEADER.pack(lcd.MAGIC, lcd.VERSION, lcd.MSG_STATS, 1)
        sent = 0
        for _ in range(40):
            try:
                with lcd.connect(receptiond.path, timeout=2) as s:
                    for _ in range(10):
                        lcd.send_msg(s, stats_msg, [stopped_fuse])
                        sent += 1
            except OSError:
                pass
        return sent

    assert run_as(NOBODY, flood) > 256
    st = settle(receptiond.stats, lambda st: st["connections"]["closes_pending"] >= 256)
    assert 256 <= st["connections"]["closes_pending"] <= 256 + 16, st["connections"]
    fd = os.open(target, os.O_RDONLY)
    with lcd.connect(receptiond.path, timeout=5) as s:
        assert lcd.ensure(s, fd, 0, 4096)["status"] == lcd.ST_OK
    os.close(fd)


# ---- fairness ----------------------------------------------------------------

FLOOD_CONNS = 16
BOUND = 5.0      # the other user's longest loaded wait, in units of its unloaded median


def cold_wait(path, fd, off):
    with lcd.connect(path, timeout=30) as s:
        t0 = time.monotonic()
        r = lcd.ensure(s, fd, off, 4096)
        assert r["status"] == lcd.ST_OK, r
        return time.monotonic() - t0


def test_another_users_cold_miss_under_a_flood(receptiond, scratch, hddsim_mount):
    """16 connections of nobody keep 64 MiB windows queued on an emulated
    WD Red; root's cold 2 MiB misses of another file must wait at most
    BOUND times their unloaded median.  Holds with the queue order's users
    in turn and window cuts (QUEUE ORDER); FIFO order made them wait for
    the whole queue, 7.5-11 s against 0.03 s."""
    lib = write_library(scratch / "f.lcvl", [("flood.mp4", 8 * GiB, 419430, 0),
                                             ("victim.mp4", 1 * GiB, 419430, 0)])
    m = hddsim_mount(lib, name="fair", read_ahead_kb=0)
    flood_fd = os.open(os.path.join(m.path, "flood.mp4"), os.O_RDONLY)
    victim_fd = os.open(os.path.join(m.path, "victim.mp4"), os.O_RDONLY)
    unloaded = [cold_wait(receptiond.path, victim_fd, k * 64 * MiB) for k in range(5)]
    base = statistics.median(unloaded)

    def flood():
        """As nobody: keep 8 windows of 64 MiB asked on each connection;
        a window answered is evicted and the next one asked (a BUSY
        answer is not retried at once: the daemon is at its limits)."""
        import select
        conns = [lcd.connect(receptiond.path, timeout=60) for _ in range(FLOOD_CONNS)]
        nxt = [i * 512 * MiB for i in range(FLOOD_CONNS)]

        def ask(i):
            lcd.send_msg(conns[i], lcd.pack_ensure(nxt[i], 4096, req_id=1, prefetch=64 * MiB),
                         [flood_fd])
            nxt[i] += 64 * MiB
        try:
            for i in range(FLOOD_CONNS):
                for _ in range(8):
                    ask(i)
            end = time.monotonic() + 60
            while time.monotonic() < end and not os.path.exists(stop_file):
                r, _, _ = select.select(conns, [], [], 0.2)
                for s in r:
                    data = s.recv(4096)
                    if not data:
                        return "closed"
                    i = conns.index(s)
                    status = lcd.ENSURE_REPLY.unpack(data)[4]
                    if status == lcd.ST_OK:
                        off = lcd.ENSURE_REPLY.unpack(data)[6]
                        os.posix_fadvise(flood_fd, off, 64 * MiB, os.POSIX_FADV_DONTNEED)
                    ask(i)
                    if status != lcd.ST_OK:
                        time.sleep(0.05)
        finally:
            for s in conns:
                s.close()
        return "done"
    stop_file = str(scratch / "stop-flood")
    outcome = {}
    t = threading.Thread(target=lambda: outcome.update(flood=run_as(NOBODY, flood)))
    t.start()
    try:
        queued = settle(lambda: receptiond.device(path=m.path)["queue_now"], lambda q: q >= 8,
                        timeout=20)
        assert queued >= 8, "the flood never queued"
        loaded = [cold_wait(receptiond.path, victim_fd, 512 * MiB + k * 64 * MiB)
                  for k in range(3)]
    finally:
        open(stop_file, "w").close()
        t.join(90)
        os.close(flood_fd)
        os.close(victim_fd)
    assert outcome.get("flood") == "done", outcome
    # The other user was served between the flood's windows, not after them.
    assert receptiond.device(path=m.path)["order"]["user_turns"] >= len(loaded)
    assert max(loaded) <= BOUND * base, \
        f"loaded waits {[round(x, 3) for x in loaded]} s, unloaded median {base:.3f} s"
