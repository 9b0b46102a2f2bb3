"""A bounded soak of receptiond at the socket level: hostile clients
(as nobody: garbage with descriptors, empty messages with descriptors,
unread statistics, connection churn, SHUTDOWN spam, misses with huge
windows) beside a good client, for SOAK_S seconds.

Pass rule: the daemon is alive; its descriptors and memory come back to
where they were before the soak (flat, within a small slack); the good
client was never refused, never timed out, and its p99 stayed within
P99_BOUND_S: a correctness bound against stalls of seconds, not a
performance claim."""
import os
import random
import statistics
import threading
import time

from fixtures_daemon import make_cold_file
from fixtures_hostile import (NOBODY, proc_fds, proc_rss_kib, proc_threads, run_as, settle)
from libception import daemon as lcd

MiB = 1 << 20
SOAK_S = float(os.environ.get("LC_SOAK_S", "40"))
P99_BOUND_S = 2.0
FD_SLACK = 4
RSS_SLACK_KIB = 32 << 10


def hostile(kind, path, fd, deadline):
    """One hostile client's loop until deadline, passing fd (inherited
    from the test); returns messages sent."""
    rnd = random.Random(kind)
    sent = 0
    stats_msg = lcd.HEADER.pack(lcd.MAGIC, lcd.VERSION, lcd.MSG_STATS, 1)
    shutdown_msg = lcd.HEADER.pack(lcd.MAGIC, lcd.VERSION, lcd.MSG_SHUTDOWN, 2)
    while time.monotonic() < deadline:
        try:
            if kind == "churn":
                socks = [lcd.connect(path, timeout=2) for _ in range(100)]
                for s in socks:
                    s.close()
                sent += 100
                time.sleep(0.05)
                continue
            with lcd.connect(path, timeout=2) as s:
                s.setblocking(False)
                for _ in range(32):
                    if kind == "garbage":
                        data = rnd.randbytes(rnd.choice([0, 3, 16, 48, 60, 1000, 70000]))
                        lcd.send_msg(s, data, [fd] * rnd.randint(0, 8))
                    elif kind == "empty":
                        lcd.send_msg(s, b"", [fd] * 8)
                    elif kind == "stats":
                        s.send(stats_msg)
                    elif kind == "shutdown":
                        s.send(shutdown_msg)
                    elif kind == "huge":
                        # Cached after the first window: the hit check's
                        # cost (a flood of cold windows is the fairness
                        # test's, test_daemon_limits.py).
                        off = rnd.randrange(0, 64) * MiB
                        lcd.send_msg(s, lcd.pack_ensure(off, 1 << 40, req_id=sent,
                                                        prefetch=1 << 40), [fd])
                    sent += 1
            # A soak, not a CPU race: a user can always burn its CPU, and on
            # two cores the good client's latency would only measure that.
            time.sleep(0.005)
        except OSError:
            time.sleep(0.01)    # refused, cut or full: the daemon defends itself
    return sent


def good_client(path, file_path, deadline, out):
    """Cold 2 MiB misses and statistics, one at a time, timed."""
    fd = os.open(file_path, os.O_RDONLY)
    lat, errors = [], []
    k = refused = 0
    while time.monotonic() < deadline:
        off = (k % 32) * 2 * MiB
        os.posix_fadvise(fd, off, 2 * MiB, os.POSIX_FADV_DONTNEED)
        t0 = time.monotonic()
        try:
            with lcd.connect(path, timeout=10) as s:
                r = lcd.ensure(s, fd, off, 4096, req_id=k + 1)
            if r["status"] != lcd.ST_OK:
                errors.append(r["status_name"])
            if k % 10 == 0:
                lcd.stats(path, timeout=10)
        except BlockingIOError:
            refused += 1        # listen backlog full: the library would pass through
            time.sleep(0.01)
            continue
        except OSError as e:
            errors.append(repr(e))
        lat.append(time.monotonic() - t0)
        k += 1
    os.close(fd)
    out.update(lat=lat, errors=errors, refused=refused)


def test_soak(receptiond, scratch):
    pid = receptiond.proc.pid
    good_file = make_cold_file(str(scratch / "good"), 64 * MiB)
    bad_fd = os.open(make_cold_file(str(scratch / "bad"), 64 * MiB, seed=2), os.O_RDONLY)
    warm = {}
    good_client(receptiond.path, good_file, time.monotonic() + 3, warm)
    time.sleep(6)      # closers started by the warm-up leave
    base = {"fds": proc_fds(pid), "rss": proc_rss_kib(pid), "threads": proc_threads(pid)}

    deadline = time.monotonic() + SOAK_S
    kinds = os.environ.get("LC_SOAK_KINDS", "garbage,empty,stats,churn,shutdown,huge").split(",")
    sent = {}
    threads = [threading.Thread(target=lambda k=k: sent.update(
        {k: run_as(NOBODY, hostile, k, receptiond.path, bad_fd, deadline)})) for k in kinds]
    for t in threads:
        t.start()
    good = {}
    peak = {"fds": 0, "rss": 0}

    def watch():
        while time.monotonic() < deadline:
            peak["fds"] = max(peak["fds"], proc_fds(pid))
            peak["rss"] = max(peak["rss"], proc_rss_kib(pid))
            time.sleep(0.5)
    w = threading.Thread(target=watch)
    w.start()
    good_client(receptiond.path, good_file, deadline, good)
    for t in threads + [w]:
        t.join(60)
    os.close(bad_fd)

    assert receptiond.alive()
    assert set(sent) == set(kinds) and all(sent.values()), sent
    fds = settle(lambda: proc_fds(pid), lambda n: n <= base["fds"] + FD_SLACK, timeout=30)
    rss = proc_rss_kib(pid)
    lat = sorted(good["lat"])
    p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))]
    report = (f"good client: {len(lat)} requests ({good['refused']} connects refused), p50 {statistics.median(lat) * 1000:.1f} ms,"
              f" p99 {p99 * 1000:.1f} ms, max {lat[-1] * 1000:.1f} ms; daemon fds {base['fds']}"
              f" -> peak {peak['fds']} -> {fds}, RSS {base['rss']} -> peak {peak['rss']} -> {rss}"
              f" KiB; hostile messages {sent}")
    print(report)
    dev = receptiond.device(path=good_file)
    print({k: dev[k] for k in ("reads", "misses", "merged", "busy_rejected", "bytes_read")},
          {k: dev["wait_us"][k] for k in ("p50", "p99", "max")})
    assert not good["errors"], (good["errors"][:5], report)
    assert p99 <= P99_BOUND_S, report
    assert fds <= base["fds"] + FD_SLACK, report
    assert rss <= base["rss"] + RSS_SLACK_KIB, report
    if "garbage" in kinds:
        assert receptiond.stats()["malformed"] > 0
