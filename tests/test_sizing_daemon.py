"""The sizing policies inside receptiond, with real programs reading an
hddsim mount through libception.so: sizes from profiles, slow start, the
adaptive policy's logged decisions, the accounting in the stats, and bad
arguments."""
import hashlib
import json
import os
import re
import subprocess
import sys
import threading
import time

import pytest

pytestmark = pytest.mark.usefixtures("need_library")


def videos(mount, n):
    names = sorted(os.listdir(os.path.join(mount.path, "sd")))[:n]
    return [f"sd/{name}" for name in names]


def cat_all(daemon, mount, names):
    """cat each file under libception, concurrently; returns their sha256."""
    procs = [subprocess.Popen(["cat", os.path.join(mount.path, n)], stdout=subprocess.PIPE,
                              env=daemon.env()) for n in names]
    sums = []
    for p in procs:
        out, _ = p.communicate(timeout=120)
        assert p.returncode == 0
        sums.append(hashlib.sha256(out).hexdigest())
    return sums


def expected_sha(mount, name):
    """What the file holds, read without libception (hddsim's bytes are
    checked against common/content.h by its own tests)."""
    with open(os.path.join(mount.path, name), "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def policy_of(daemon, mount):
    return daemon.device(path=mount.path)["policy"]


def test_competitive_slow_start_and_accounting(make_daemon, sd_mount, profile_dir):
    d = make_daemon(["--policy", "competitive:switch=20ms,rate=100M"])
    names = videos(sd_mount, 3)
    assert cat_all(d, sd_mount, names) == [expected_sha(sd_mount, n) for n in names]
    log = d.log_text()
    # 20 ms x 100 MiB/s = 2 MiB
    assert re.search(r"receptiond: competitive fuse-\S+: size 2\.00M = switch 20\.00 ms x "
                     r"104\.9 MB/s \(arguments\); slow start on from 64K; 1 read at once", log), log
    p = policy_of(d, sd_mount)
    assert p["name"] == "competitive" and p["size"] == 2 << 20
    assert p["windows_slow_start"] >= 3 * 5      # 64K..1M doubling, per stream
    assert p["windows_full"] > 0
    acct = p["accounting"]["total"]
    total = sum(os.path.getsize(os.path.join(sd_mount.path, n)) for n in names)
    # Consumed: everything the three readers went through.
    assert total - 3 * (2 << 20) <= acct["demanded_bytes"] <= total
    assert acct["read_bytes"] >= acct["demanded_bytes"] - 3 * (2 << 20)
    assert 0 < acct["useful_bytes"] <= acct["prefetched_bytes"]
    assert acct["misses"] > 0 and acct["disk_ms_per_mib"] > 0
    # Each reader is a live stream (30 s before it ends), under its inode.
    listed = {x["ino"]: x for x in p["stream_list"]}
    for n in names:
        st = os.stat(os.path.join(sd_mount.path, n))
        assert st.st_ino in listed
        assert st.st_size - (2 << 20) <= listed[st.st_ino]["consumed"] <= st.st_size


def test_competitive_takes_the_stored_profile(make_daemon, sd_mount, profile_dir):
    profile = {"version": 1, "rate": 120e6, "switch_s": 0.015, "competitive_size": 1.8e6,
               "concurrency": 2, "sequential": [{"position": 0.01, "rate": 1}]}
    with open(profile_dir / f"{sd_mount.bdi}.json", "w", encoding="utf-8") as f:
        json.dump(profile, f)
    d = make_daemon(["--policy", "competitive:slowstart=0"])
    names = videos(sd_mount, 2)
    assert cat_all(d, sd_mount, names) == [expected_sha(sd_mount, n) for n in names]
    log = d.log_text()
    assert f"switch 15.00 ms x 120.0 MB/s ({profile_dir}/{sd_mount.bdi}.json)" in log, log
    assert "2 reads at once" in log
    dev = d.device(path=sd_mount.path)
    assert dev["workers"] == 2
    assert dev["policy"]["windows_slow_start"] == 0


SCATTERED_READER = """
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
size = os.fstat(fd).st_size
for off in range(0, size, 256 * 1024):   # far apart: every pread misses
    sys.stdout.buffer.write(os.pread(fd, 4096, off))
"""


@pytest.mark.parametrize("direct", ["", ",direct=0"])
def test_a_device_without_seeks_is_left_to_the_library(make_daemon, sd_mount, profile_dir,
                                                       direct):
    """No mechanical switch (0.05 ms) and parallel reads faster: the
    daemon has nothing to add, answers the
    first ENSURE with LC_ST_DIRECT, and the library stops asking for that
    device (LC_DIRECT_RECHECK_S); direct=0 keeps the daemon in the path,
    where the same reads each come as a miss."""
    from fixtures_daemon import drop_cache
    d = make_daemon(["--policy", "competitive:switch=0.05ms,rate=1000M,concurrency=4" + direct])
    name = videos(sd_mount, 1)[0]
    path = os.path.join(sd_mount.path, name)
    drop_cache(path)
    r = subprocess.run([sys.executable, "-c", SCATTERED_READER, path], capture_output=True,
                       env=d.env(), timeout=120, check=False)
    assert r.returncode == 0, r.stderr
    offsets = range(0, os.path.getsize(path), 256 * 1024)
    with open(path, "rb") as f:
        assert r.stdout == b"".join(os.pread(f.fileno(), 4096, off) for off in offsets)
    reads = len(offsets)
    assert reads > 20
    dev = d.device(path=sd_mount.path)
    log = d.log_text()
    if not direct:
        assert dev["policy"]["direct"] is True
        assert "direct: nothing to add here, the library reads on its own" in log, log
        # One ENSURE per LC_DIRECT_RECHECK_S, not one per miss.
        assert 1 <= dev["requests"] == dev["direct_answers"] <= 2, dev
        assert dev["bytes_read"] == 0 and dev["reads"] == 0
    else:
        assert dev["policy"]["direct"] is False
        assert dev["direct_answers"] == 0
        assert dev["requests"] >= reads // 2, dev
        assert dev["reads"] > 0 and dev["bytes_read"] > 0


def test_adaptive_logs_each_change_with_its_reason(make_daemon, sd_mount, profile_dir):
    # Short intervals and no light-load hold, so it decides within seconds.
    d = make_daemon(["--policy",
                     "adaptive:interval=1s,ramp=200ms,busy=0%,start=1M,compare=intervals"])
    names = videos(sd_mount, 60)
    stop = threading.Event()
    errors = []

    def readers():
        i = 0
        while not stop.is_set():
            try:
                cat_all(d, sd_mount, names[i % 60: i % 60 + 4])
            except AssertionError as e:
                errors.append(e)
                return
            i += 4
            sd_mount.drop_cache()

    t = threading.Thread(target=readers)
    t.start()
    change = re.compile(r"receptiond: adaptive fuse-\S+: size 1\.00M -> 1\.50M: trying larger "
                        r"\(unmeasured\): score [0-9.e+]+ here, - smaller, - larger \(busy \d+%, "
                        r"miss ratio [0-9.]+, [0-9.]+ disk ms/MiB\)")
    try:
        deadline = time.monotonic() + 90
        while not change.search(d.log_text()) and time.monotonic() < deadline:
            time.sleep(0.5)
    finally:
        stop.set()
        t.join()
    assert not errors
    log = d.log_text()
    assert "adaptive fuse-" in log and "size 1.00M from start argument" in log
    assert change.search(log), log
    p = policy_of(d, sd_mount)
    assert p["changes"] >= 1 and p["decisions"] >= 2
    assert p["target"] >= 1536 * 1024 and "->" in p["reason"] or p["reason"].startswith("minimum")
    assert p["scores"], p
    assert p["parameters"]["interval_s"] == 1.0 and p["parameters"]["busy"] == 0.0


def test_adaptive_compares_neighbours_side_by_side(make_daemon, sd_mount, profile_dir):
    """The default compare=side-by-side: during an interval a share of the
    files read one step smaller and as many one step larger, and the
    decision compares the three sizes' scores from the same interval."""
    d = make_daemon(["--policy", "adaptive:interval=3s,ramp=200ms,busy=0%,start=1M,trial=30%"])
    names = videos(sd_mount, 60)
    stop = threading.Event()
    sums = []

    def readers():
        i = 0
        while not stop.is_set():
            batch = names[i % 60: i % 60 + 4]
            sums.append((cat_all(d, sd_mount, batch), batch))
            i += 4
            sd_mount.drop_cache()

    t = threading.Thread(target=readers)
    t.start()
    # a score, its standard error, its streams and its two parts
    score = r"[0-9.e+]+\+-\d+% of \d+ streams \([0-9.e+]+ ms/MiB read, read/used [\d.]+\)"
    decision = re.compile(rf"receptiond: adaptive fuse-\S+: size (\S+) (kept: (lowest|no neighbour "
                          rf"lower by its noise) side by side over \d+ s \(score {score}; smaller "
                          rf"({score}|-), larger ({score}|-)\)|-> \S+: (smaller|larger) scored "
                          rf"lowest side by side over \d+ s: ({score}|-) smaller, {score} here, "
                          rf"({score}|-) larger \([\d.]+% of streams each way\))")
    try:
        deadline = time.monotonic() + 90
        while not decision.search(d.log_text()) and time.monotonic() < deadline:
            time.sleep(0.5)
    finally:
        stop.set()
        t.join()
    log = d.log_text()
    assert "compare side by side (trial 30% each way, 7.5% once held, sigma 1.5, escape 3)" in log
    assert decision.search(log), log
    # Files read at the neighbours' sizes still read right.
    for got, batch in sums[:3]:
        assert got == [expected_sha(sd_mount, n) for n in batch]
    p = policy_of(d, sd_mount)
    assert p["compare"] == "side-by-side" and p["trial"] == 0.3
    scores = p["side_by_side"]
    assert scores["current"] > 0 and (scores["smaller"] > 0 or scores["larger"] > 0), p
    assert 0 < p["side_by_side_rel_se"]["current"] < 1 and p["sigma"] == 1.5, p


def test_bad_policy_arguments_fall_back_to_fixed(make_daemon, sd_mount, profile_dir):
    d = make_daemon(["--policy", "adaptive:bogus=1"])
    names = videos(sd_mount, 1)
    assert cat_all(d, sd_mount, names) == [expected_sha(sd_mount, names[0])]
    log = d.log_text()
    assert re.search(r"receptiond: device fuse-\S+: policy adaptive: adaptive fuse-\S+: bad "
                     r"argument \"bogus=1\" .*; using fixed", log), log
    assert policy_of(d, sd_mount)["name"] == "fixed"


SLOW_READER = """
import sys, time
with open(sys.argv[1], "rb") as f:
    for _ in range(int(sys.argv[2])):
        if not f.read(65536):
            break
        time.sleep(0.05)
"""


def test_reclaim_of_prefetched_windows_counts_as_eviction(make_daemon, sd_mount, profile_dir,
                                                          harness_cgroup):
    """Whole-file windows for 8 slow readers under a 40 MiB memory limit:
    reclaim evicts prefetched pages before the readers get to them, and the
    residency re-checks see it (cachestat shadow entries)."""
    group = harness_cgroup(40 << 20)
    d = make_daemon(["--policy", "bitrate:scale=none,size=64M"])
    group.add(d.proc.pid)
    sizes = {n: os.path.getsize(os.path.join(sd_mount.path, n)) for n in videos(sd_mount, 60)}
    largest = sorted(sizes, key=sizes.get)[-8:]
    procs = [subprocess.Popen([sys.executable, "-c", SLOW_READER,
                               os.path.join(sd_mount.path, n), "60"], env=d.env())
             for n in largest]
    for p in procs:
        assert p.wait(timeout=120) == 0
    time.sleep(2.5)   # two re-check ticks
    acct = policy_of(d, sd_mount)["accounting"]["total"]
    print({k: acct[k] for k in ("prefetched_bytes", "evicted_bytes", "evicted_needed_bytes",
                                "evicted_windows",
                                "evict_age_s", "dropped_bytes", "reread_bytes", "useful_bytes",
                                "wasted_bytes", "miss_ratio")})
    assert acct["prefetched_bytes"] > 80 << 20, acct
    assert acct["evicted_bytes"] > 0 and acct["evicted_windows"] > 0, acct
    assert acct["evict_age_s"] > 0
    assert acct["evicted_bytes"] <= acct["prefetched_bytes"]
    # Needed: evicted, then missed by its reader (a subset).
    assert 0 < acct["evicted_needed_bytes"] <= acct["evicted_bytes"]
