"""A device that stops answering (a hung FUSE server) stalls only its own
queue: the daemon still answers for other devices and for statistics."""
import os
import signal
import threading

from fixtures_daemon import make_cold_file
from fixtures_hddsim import write_library
from libception import daemon as lcd

MiB = 1 << 20


def test_hung_fuse_device_does_not_stall_the_others(receptiond, scratch, hddsim_mount):
    lib = write_library(scratch / "h.lcvl", [("v.mp4", 8 * MiB, 419430, 0)])
    m = hddsim_mount(lib, name="hung", read_ahead_kb=0)
    fuse_fd = os.open(os.path.join(m.path, "v.mp4"), os.O_RDONLY)
    disk_file = make_cold_file(str(scratch / "disk"), 4 * MiB)
    disk_fd = os.open(disk_file, os.O_RDONLY)
    result = {}

    def ask_fuse():
        try:
            with receptiond.connect() as s:
                s.settimeout(120)
                result["fuse"] = lcd.ensure(s, fuse_fd, 0, 4096)
        except Exception as e:  # noqa: BLE001 - checked below
            result["fuse"] = e

    os.kill(m.pid, signal.SIGSTOP)
    t = threading.Thread(target=ask_fuse)
    try:
        t.start()
        # The FUSE request is queued or being read, blocked on the server.
        for _ in range(200):
            devs = {d["name"]: d for d in receptiond.stats()["devices"]}
            fuse = [d for n, d in devs.items() if n.startswith("fuse-")]
            if fuse and fuse[0]["misses"] == 1:
                break
            t.join(0.01)
        assert fuse and fuse[0]["misses"] == 1 and "fuse" not in result
        # Meanwhile another device is served normally.
        with receptiond.connect() as s:
            s.settimeout(30)
            r = lcd.ensure(s, disk_fd, 0, 4096)
        assert r["status"] == lcd.ST_OK and r["bytes_read"] == 2 * MiB
        assert "fuse" not in result     # still waiting for the hung server
    finally:
        os.kill(m.pid, signal.SIGCONT)
        t.join(120)
        os.close(disk_fd)
        os.close(fuse_fd)
    r = result["fuse"]
    assert isinstance(r, dict) and r["status"] == lcd.ST_OK, r
    assert r["bytes_read"] == 2 * MiB


def test_exits_on_sigterm_with_a_read_blocked(receptiond, scratch, hddsim_mount):
    lib = write_library(scratch / "b.lcvl", [("v.mp4", 8 * MiB, 419430, 0)])
    m = hddsim_mount(lib, name="blocked", read_ahead_kb=0)
    fd = os.open(os.path.join(m.path, "v.mp4"), os.O_RDONLY)
    s = receptiond.connect()
    os.kill(m.pid, signal.SIGSTOP)
    try:
        lcd.send_msg(s, lcd.pack_ensure(0, 4096, req_id=1), [fd])
        for _ in range(500):
            fuse = [d for d in receptiond.stats()["devices"] if d["name"].startswith("fuse-")]
            if fuse and fuse[0]["inflight_now"] == 1:
                break
            threading.Event().wait(0.01)
        assert fuse and fuse[0]["inflight_now"] == 1
        receptiond.signal(signal.SIGTERM)
        # The daemon does its part at once: gives up the socket, logs and
        # exits.  (The kernel cannot reap a thread waiting for a FUSE
        # answer already handed to the server, so the process itself
        # finishes exiting when the server answers, below.)
        for _ in range(3000):
            if "receptiond: exited" in receptiond.log_text():
                break
            threading.Event().wait(0.01)
        assert "a read is still blocked; exiting without it" in receptiond.log_text()
        assert "receptiond: exited" in receptiond.log_text()
        assert not os.path.exists(receptiond.path)
    finally:
        os.kill(m.pid, signal.SIGCONT)
        s.close()
        os.close(fd)
    assert receptiond.proc.wait(timeout=60) == 0
