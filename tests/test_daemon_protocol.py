"""receptiond against malformed and hostile socket input: every bad
message costs a log line and nothing else; a well-formed client is
served normally afterwards."""
import array
import os
import re
import socket
import struct
import subprocess
import threading

import pytest

from conftest import BIN
from fixtures_daemon import make_cold_file
from libception import daemon as lcd

LIBCEPTION = os.path.join(BIN, "libception")


def served_normally(d, path):
    """A well-formed ENSURE on a new connection gets a proper answer."""
    fd = os.open(path, os.O_RDONLY)
    try:
        with d.connect() as s:
            r = lcd.ensure(s, fd, 0, 4096, req_id=4242)
    finally:
        os.close(fd)
    assert r["id"] == 4242 and r["status"] == lcd.ST_OK, r
    assert r["resident_offset"] == 0 and r["resident_length"] >= 4096
    return r


def send_raw(d, data, fds=(), expect_reply=False):
    with d.connect() as s:
        lcd.send_msg(s, data, fds)
        if expect_reply:
            return s.recv(4096)
        # The daemon must not have closed on us for a single bad message
        # nor answered a message it could not parse.
        s.settimeout(0.3)
        try:
            return s.recv(4096)
        except socket.timeout:
            return None


@pytest.fixture
def target(scratch):
    return make_cold_file(str(scratch / "target"), 4 << 20)


def test_short_message(receptiond, target):
    assert send_raw(receptiond, b"\x01\x02\x03") is None
    assert "short message" in receptiond.log_text()
    served_normally(receptiond, target)


def test_oversized_message(receptiond, target):
    assert send_raw(receptiond, b"x" * 70000) is None
    assert "oversized message" in receptiond.log_text()
    served_normally(receptiond, target)


def test_bad_magic(receptiond, target):
    fd = os.open(target, os.O_RDONLY)
    try:
        assert send_raw(receptiond, lcd.pack_ensure(0, 4096, magic=0xdeadbeef), [fd]) is None
    finally:
        os.close(fd)
    assert "bad magic" in receptiond.log_text()
    served_normally(receptiond, target)


def test_bad_version_is_answered(receptiond, target):
    fd = os.open(target, os.O_RDONLY)
    try:
        data = send_raw(receptiond, lcd.pack_ensure(0, 4096, req_id=77, version=99), [fd],
                        expect_reply=True)
    finally:
        os.close(fd)
    r = lcd.ENSURE_REPLY.unpack(data)
    assert r[3] == 77 and r[4] == lcd.ST_BADVERSION
    assert receptiond.stats()["bad_version"] == 1
    served_normally(receptiond, target)


def test_wrong_size_for_type(receptiond, target):
    fd = os.open(target, os.O_RDONLY)
    try:
        data = send_raw(receptiond, lcd.pack_ensure(0, 4096, req_id=5) + b"\0" * 8, [fd],
                        expect_reply=True)
    finally:
        os.close(fd)
    assert lcd.ENSURE_REPLY.unpack(data)[4] == lcd.ST_BADREQUEST
    # a STATS header with a tail, an unknown type
    assert send_raw(receptiond, lcd.HEADER.pack(lcd.MAGIC, lcd.VERSION, lcd.MSG_STATS, 1) + b"x") is None
    assert send_raw(receptiond, lcd.HEADER.pack(lcd.MAGIC, lcd.VERSION, 99, 1)) is None
    log = receptiond.log_text()
    assert "wrong size for its type" in log and "unknown message type" in log
    served_normally(receptiond, target)


def test_ensure_without_fd(receptiond, target):
    data = send_raw(receptiond, lcd.pack_ensure(0, 4096, req_id=6), expect_reply=True)
    assert lcd.ENSURE_REPLY.unpack(data)[4] == lcd.ST_BADREQUEST
    assert "ENSURE without a file descriptor" in receptiond.log_text()
    served_normally(receptiond, target)


def test_ensure_with_two_fds(receptiond, target):
    a, b = os.open(target, os.O_RDONLY), os.open(target, os.O_RDONLY)
    try:
        data = send_raw(receptiond, lcd.pack_ensure(0, 4096, req_id=8), [a, b], expect_reply=True)
    finally:
        os.close(a)
        os.close(b)
    assert lcd.ENSURE_REPLY.unpack(data)[4] == lcd.ST_BADREQUEST
    assert "more than one file descriptor" in receptiond.log_text()
    served_normally(receptiond, target)


def test_fd_on_a_stats_message(receptiond, target):
    fd = os.open(target, os.O_RDONLY)
    try:
        assert send_raw(receptiond, lcd.HEADER.pack(lcd.MAGIC, lcd.VERSION, lcd.MSG_STATS, 1),
                        [fd]) is None
    finally:
        os.close(fd)
    assert "unexpected file descriptor" in receptiond.log_text()
    served_normally(receptiond, target)


@pytest.mark.parametrize("kind", ["pipe", "directory", "socket", "write-only"])
def test_fd_that_is_not_a_readable_regular_file(receptiond, target, scratch, kind):
    close = []
    if kind == "pipe":
        r, w = os.pipe()
        fd, close = r, [r, w]
    elif kind == "directory":
        fd = os.open(str(scratch), os.O_RDONLY | os.O_DIRECTORY)
        close = [fd]
    elif kind == "socket":
        a, b = socket.socketpair()
        fd, close = a.fileno(), [a.detach(), b.detach()]
    else:
        fd = os.open(target, os.O_WRONLY)
        close = [fd]
    try:
        data = send_raw(receptiond, lcd.pack_ensure(0, 4096, req_id=9), [fd], expect_reply=True)
    finally:
        for f in close:
            os.close(f)
    r = lcd.ENSURE_REPLY.unpack(data)
    assert r[3] == 9 and r[4] == lcd.ST_BADREQUEST
    assert receptiond.stats()["bad_requests"] == 1
    assert "ENSURE: fd is" in receptiond.log_text()
    served_normally(receptiond, target)


def test_garbage_flood_from_many_connections(receptiond, target):
    """Many connections at once, each sending a stream of junk of every
    kind: the daemon drops them and still answers a good client."""
    errors = []

    def flood(n):
        try:
            rnd = os.urandom(64 * 1024)
            with receptiond.connect() as s:
                for i in range(40):
                    size = [1, 15, 16, 40, 48, 1000, 2999, 3000, 65000][(n + i) % 9]
                    start = (n * 131 + i * 17) % 1000
                    try:
                        s.send(rnd[start:start + size])
                    except (BrokenPipeError, ConnectionResetError):
                        return   # closed for too much junk, as designed
        except OSError as e:
            errors.append(e)

    threads = [threading.Thread(target=flood, args=(n,)) for n in range(32)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    st = receptiond.stats()
    assert st["malformed"] > 32
    assert receptiond.alive()
    assert "too much malformed input; connection closed" in receptiond.log_text()
    served_normally(receptiond, target)
    # The flood's connections are all gone again.
    assert receptiond.stats()["connections"]["now"] <= 1


def test_many_ensures_without_waiting_get_busy(make_daemon, scratch):
    """A client that queues more than its share is told LC_ST_BUSY rather
    than growing the queue without bound."""
    d = make_daemon(["--queue-depth", "4"])
    files = [make_cold_file(str(scratch / f"f{i}"), 3 << 20, seed=i) for i in range(12)]
    fds = [os.open(f, os.O_RDONLY) for f in files]
    try:
        with d.connect() as s:
            for i, fd in enumerate(fds):
                lcd.send_msg(s, lcd.pack_ensure(0, 4096, req_id=100 + i), [fd])
            replies = [lcd.recv_ensure_reply(s) for _ in fds]
    finally:
        for fd in fds:
            os.close(fd)
    assert sorted(r["id"] for r in replies) == list(range(100, 112))
    statuses = [r["status"] for r in replies]
    assert lcd.ST_BUSY in statuses and lcd.ST_OK in statuses
    assert d.device()["busy_rejected"] == statuses.count(lcd.ST_BUSY)


def test_report_is_counted(receptiond):
    hist = {"pread": [0, 3, 5] + [0] * 25}
    msg = lcd.pack_report(os.getpid(), calls={"pread": 8, "read": 2}, hits={"pread": 6},
                          nbytes={"pread": 8 * 65536}, hist=hist)
    assert len(msg) == lcd.REPORT_SIZE
    with receptiond.connect() as s:
        s.send(msg)
        s.send(msg)
    st = None
    for _ in range(100):
        st = receptiond.stats()
        if st["calls"]["pread"]["calls"] == 16:
            break
    assert st["calls"]["pread"] == {"calls": 16, "hits": 12, "bytes": 16 * 65536,
                                    "hist": [0, 6, 10] + [0] * 25}
    assert st["calls"]["read"]["calls"] == 4
    assert any(c["pid"] == os.getpid() and c["reports"] == 2 for c in st["clients"])


def wait_stats(d, ready):
    st = d.stats()
    for _ in range(100):
        if ready(st):
            break
        st = d.stats()
    return st


def test_report_devices_are_counted(receptiond, target):
    """Per-device entries land on the disk of their st_dev if a file system
    with it is mounted (library_devices until the disk gets an ENSURE, then
    on its device); a st_dev mounted nowhere and the library's "other"
    entry go to library_unattributed."""
    dev = os.stat(target).st_dev
    bogus = os.makedev(4095, 1048575)
    msg = lcd.pack_report(os.getpid(), calls={"pread": 10}, hits={"pread": 9},
                          devs=[(dev, 4, 3, 3 * 4096), (bogus, 5, 5, 500)], other=(1, 1, 10))
    assert len(msg) == lcd.REPORT_SIZE
    with receptiond.connect() as s:
        s.send(msg)
    st = wait_stats(receptiond, lambda st: st["library_unattributed"]["calls"])
    assert st["devices"] == []  # no queue, no worker for a report
    assert len(st["library_devices"]) == 1, st["library_devices"]
    d = st["library_devices"][0]
    assert (d["library_calls"], d["library_hits"], d["library_hit_bytes"]) == (4, 3, 3 * 4096)
    assert st["library_unattributed"] == {"calls": 6, "hits": 6, "hit_bytes": 510}
    # the human table shows them
    out = subprocess.run([LIBCEPTION, "stats", "--socket", receptiond.path],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    row = next(line for line in out.stdout.splitlines() if line.startswith(d["name"] + " "))
    # requests, daemon hits, library hits, library hit bytes
    assert re.search(r" 0 +0 +3 +12\.0 KiB ", row), row
    assert "library hits on no device known here: 6 hits" in out.stdout
    # the disk's first ENSURE: its device takes the library's counts over
    served_normally(receptiond, target)
    st = receptiond.stats()
    assert st["library_devices"] == []
    dev = receptiond.device()
    assert dev["disk"] == d["disk"] and dev["requests"] == 1
    assert (dev["library_calls"], dev["library_hits"]) == (4, 3)


@pytest.mark.parametrize("what,cut,note", [
    ("version 1 REPORT", None, "protocol version 1, not 2"),
    ("REPORT of version 1's size", 32 * (lcd.REPORT_DEVS + 1), "wrong size for its type"),
    ("REPORT cut short", 8, "wrong size for its type"),
])
def test_malformed_report_is_dropped(receptiond, target, what, cut, note):
    msg = lcd.pack_report(os.getpid(), calls={"read": 3}, hits={"read": 3},
                          devs=[(os.stat(target).st_dev, 3, 3, 300)])
    if cut is None:
        msg = lcd.HEADER.pack(lcd.MAGIC, 1, lcd.MSG_REPORT, 0) + msg[lcd.HEADER.size:-32 * 9]
        reply = send_raw(receptiond, msg, expect_reply=True)
        assert lcd.ENSURE_REPLY.unpack(reply)[4] == lcd.ST_BADVERSION
    else:
        assert send_raw(receptiond, msg[:-cut]) is None
    assert note in receptiond.log_text()
    st = receptiond.stats()
    assert st["calls"]["read"]["calls"] == 0
    assert st["devices"] == [] and st["library_devices"] == []
    assert (st["bad_version"], st["malformed"]) == ((1, 0) if cut is None else (0, 1))
    served_normally(receptiond, target)


def test_shutdown_only_from_root_or_owner(receptiond, target):
    """www-data may ask for prefetching but not stop a root daemon."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.setgid(33)
            os.setuid(33)
            try:
                lcd.request_shutdown(receptiond.path)
            except lcd.DaemonError:
                fd = os.open(target, os.O_RDONLY)
                with receptiond.connect() as s:
                    code = 0 if lcd.ensure(s, fd, 0, 4096)["status"] == lcd.ST_OK else 3
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0
    assert receptiond.alive()
    assert "shutdown refused: uid 33" in receptiond.log_text()
    lcd.request_shutdown(receptiond.path)
    assert receptiond.proc.wait(timeout=20) == 0
    assert not os.path.exists(receptiond.path)
