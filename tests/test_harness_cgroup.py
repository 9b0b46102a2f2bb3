"""The memory cgroup really bounds page cache: a file four times larger
than the limit, read inside the group, leaves usage within the limit and
most of the file uncached; members are killed and the group removed."""
import os
import subprocess

from libception import cgroup

MIB = 2**20


def _cached_bytes(path):
    out = subprocess.run(["fincore", "--bytes", "--noheadings", "--output", "RES", str(path)],
                         capture_output=True, text=True, check=True).stdout
    return int(out.split()[0])


def _drop_cache(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def test_limit_bounds_page_cache(scratch, harness_cgroup):
    limit = 64 * MIB
    size = 4 * limit
    path = scratch / "big.bin"
    with open(path, "wb") as f:
        block = os.urandom(MIB)
        for _ in range(size // MIB):
            f.write(block)
    _drop_cache(path)
    assert _cached_bytes(path) < size // 8
    group = harness_cgroup(limit)
    subprocess.run(["cat", str(path)], stdout=subprocess.DEVNULL, check=True,
                   preexec_fn=group.preexec)
    assert cgroup.held(group.max_usage(), limit)
    assert cgroup.held(group.usage(), limit)
    # The group had to evict: at most the limit's worth stayed cached.
    assert _cached_bytes(path) <= limit
    assert group.stat()["cache"] <= limit
    _drop_cache(path)


def test_control_without_limit_caches_the_file(scratch, harness_cgroup):
    # The same read in an unlimited group keeps the file cached, so the
    # test above can fail.
    size = 32 * MIB
    path = scratch / "mid.bin"
    path.write_bytes(os.urandom(size))
    _drop_cache(path)
    group = harness_cgroup(None)
    subprocess.run(["cat", str(path)], stdout=subprocess.DEVNULL, check=True,
                   preexec_fn=group.preexec)
    assert _cached_bytes(path) >= size * 3 // 4
    assert group.usage() >= size * 3 // 4
    _drop_cache(path)


def test_destroy_kills_members_and_removes_group(harness_cgroup):
    group = harness_cgroup(32 * MIB)
    procs = [subprocess.Popen(["sleep", "300"], preexec_fn=group.preexec) for _ in range(3)]
    assert sorted(group.pids()) == sorted(p.pid for p in procs)
    group.destroy()
    for p in procs:
        assert p.wait(timeout=10) != 0
    assert not os.path.exists(group.path)


def test_create_replaces_a_leftover_group(harness_cgroup):
    g = harness_cgroup(16 * MIB, suffix="-leftover")
    p = subprocess.Popen(["sleep", "300"], preexec_fn=g.preexec)
    again = cgroup.MemoryGroup(g.name, 8 * MIB).create()
    assert p.wait(timeout=10) != 0
    assert again.pids() == []
    assert int(open(os.path.join(again.path, "memory.limit_in_bytes")).read()) == 8 * MIB


def test_drop_cache_empties_the_group_with_members_running(scratch, harness_cgroup):
    size = 32 * MIB
    path = scratch / "warm.bin"
    path.write_bytes(os.urandom(size))
    _drop_cache(path)
    group = harness_cgroup(None)
    sleeper = subprocess.Popen(["sleep", "300"], preexec_fn=group.preexec)
    subprocess.run(["cat", str(path)], stdout=subprocess.DEVNULL, check=True,
                   preexec_fn=group.preexec)
    assert _cached_bytes(path) >= size * 3 // 4
    group.drop_cache()
    assert _cached_bytes(path) < size // 8
    assert group.pids() == [sleeper.pid]


def test_oom_kills_counts_a_member_the_limit_killed(harness_cgroup):
    """What the benchmark tells a server that vanished mid-probe apart by."""
    group = harness_cgroup(16 * MIB)
    assert group.oom_kills() == 0
    hog = subprocess.Popen(["python3", "-c", "b = bytearray(64 << 20); b[::4096] = b'x' * (16384)"],
                           preexec_fn=group.preexec)
    assert hog.wait(timeout=60) == -9
    assert group.oom_kills() >= 1
