"""The block disk end to end: hddsim --disk -> loop device (direct I/O) ->
ext4 (or xfs) read-only.  Every byte read through the file system is the video's; the reads
land on the platter where FIEMAP says the file lies; page cache stays in
the reader's cgroup and out of the host's cache of the platter file;
teardown, `libception cleanup` after SIGKILL, and two stacks at once."""
import filecmp
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from conftest import ROOT, bin_path
from fixtures_common import http_get
from fixtures_hddsim import expected_files, write_library
from fixtures_vidload import materialize
from libception import blockdisk, cgroup, cleanup, hddsim, loopdev
from libception.bench.rig import Rig

MiB = 1 << 20
VIDEOS = [(f"sd/v{i:05d}.mp4", 300_000 + i * 91_111, 419430, 0) for i in range(24)] + \
         [(f"hd/c{i:05d}.mp4", 6 * MiB + 777, 2097150, MiB // 2) for i in range(2)] + \
         [(f"hd/d{i:05d}.mp4", 5 * MiB + 4096, 2097150, 2 * MiB) for i in range(2)]
BIG = [("hd/big.mp4", 130 * MiB + 5, 2097150, 0)]


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    """Library files, their materialized copies, and an image cache of
    this module's own."""
    d = tmp_path_factory.mktemp("blockdisk")
    os.environ["LIBCEPTION_DISK_CACHE"] = str(d / "cache")
    lib = write_library(d / "lib.lcvl", VIDEOS)
    materialize(lib, d / "copy")
    yield {"dir": d, "lib": lib, "copy": d / "copy",
           "big": write_library(d / "big.lcvl", VIDEOS[:2] + BIG)}
    os.environ.pop("LIBCEPTION_DISK_CACHE", None)


@pytest.fixture
def stack(tmp_path):
    """Factory: stack(library, **BlockDisk options) -> a mounted BlockDisk,
    torn down after the test whatever happens."""
    made = []

    def make(library, name="disk", **kw):
        d = blockdisk.BlockDisk(tmp_path / name, "wd-red", library, **kw)
        made.append(d)
        return d

    yield make
    for d in reversed(made):
        d.unmount()


def mounted(path):
    return hddsim.is_mounted(str(path))


@pytest.mark.parametrize("fs", ["ext4", "xfs"])
def test_every_byte_through_the_file_system(env, stack, fs):
    d = stack(env["lib"], fs=fs)
    assert loopdev.direct_io(d.dev)
    files = expected_files(VIDEOS)
    for path, (_, _, size) in files.items():
        assert os.path.getsize(os.path.join(d.path, path)) == size
        assert filecmp.cmp(os.path.join(d.path, path), env["copy"] / path, shallow=False), path
    assert d.stats()["bytes"] >= sum(size for _, (_, _, size) in files.items())


def fiemap(path):
    """[(physical byte offset, length)] of a file's extents (filefrag -v)."""
    out = subprocess.run(["filefrag", "-v", "-b4096", path], check=True,
                         capture_output=True, text=True).stdout
    return [(int(p) * 4096, (int(le) - int(ls) + 1) * 4096) for ls, le, p in
            re.findall(r"^\s*\d+:\s+(\d+)\.\.\s*(\d+):\s+(\d+)\.\.", out, re.M)]


def test_reads_land_where_fiemap_says(env, stack, tmp_path):
    trace = tmp_path / "trace.txt"
    d = stack(env["lib"], trace=str(trace))
    name = "sd/v00017.mp4"
    path = os.path.join(d.path, name)
    extents, size = fiemap(path), os.path.getsize(path)
    with open(path, "rb") as f:
        f.read()
    d.unmount()   # hddsim writes out its trace
    rows = [line.split() for line in trace.read_text().splitlines() if not line.startswith("#")]
    reads = [(int(r[1]), int(r[2])) for r in rows]
    inside = [(pos, n) for pos, n in reads
              if any(p <= pos and pos + n <= p + le for p, le in extents)]
    # The file's bytes came from its extents, all of them, starting at the first.
    assert sum(n for _, n in inside) >= size
    assert min(pos for pos, _ in inside) == extents[0][0]
    straddling = [(pos, n) for pos, n in reads if (pos, n) not in inside and
                  any(pos < p + le and p < pos + n for p, le in extents)]
    assert not straddling


def cached_bytes(path):
    """Bytes of `path` in the host's page cache (fincore)."""
    out = subprocess.run(["fincore", "-nb", "-o", "RES", path], check=True,
                         capture_output=True, text=True).stdout
    return int(out.split()[0])


def read_in_group(group, path):
    subprocess.run(["dd", f"if={path}", "of=/dev/null", "bs=1M", "status=none"],
                   preexec_fn=group.preexec, check=True)


@pytest.mark.parametrize("direct", [True, False])
def test_memory_stays_in_the_group_and_off_the_platter_file(env, stack, direct):
    limit = 32 * MiB
    d = stack(env["big"], direct=direct)
    platter = os.path.join(d.hddsim.path, "disk")
    video = os.path.join(d.path, BIG[0][0])
    assert os.path.getsize(video) >= 4 * limit
    with cgroup.MemoryGroup(f"test-blockdisk-{os.getpid()}", limit) as g:
        read_in_group(g, video)
        assert cgroup.held(g.max_usage(), limit)
        assert g.stat()["total_cache" if "total_cache" in g.stat() else "cache"] > 0
    if direct:   # the loop device reads the platter file with O_DIRECT: no copy
        assert cached_bytes(platter) < MiB
    else:        # the control: without direct I/O the platter file's pages pile up
        assert cached_bytes(platter) >= 16 * MiB


OWNER = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, {harness!r})
    from libception import blockdisk, cleanup
    with cleanup.Cleanup(prog="owner") as c:
        d = blockdisk.BlockDisk({where!r}, "wd-red", {lib!r})
        c.push("block disk", d.unmount)
        print(d.dev, d.path, d.hddsim.path, d.hddsim.pid, d.record.path, flush=True)
        time.sleep(600)
""")


def start_owner(env, where):
    code = OWNER.format(harness=os.path.join(ROOT, "harness"), where=str(where),
                        lib=str(env["lib"]))
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    dev, fs, hpath, hpid, state = p.stdout.readline().split()
    return p, dev, fs, hpath, int(hpid), state


def assert_gone(dev, fs, hpath, hpid, state):
    assert not mounted(fs) and not mounted(hpath)
    assert loopdev.backing_file(dev) is None
    assert not os.path.exists(state)
    deadline = time.monotonic() + 10
    while os.path.exists(f"/proc/{hpid}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not os.path.exists(f"/proc/{hpid}")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_owner_signalled_tears_down(env, tmp_path, sig):
    p, *pieces = start_owner(env, tmp_path / "owner")
    try:
        p.send_signal(sig)
        p.wait(30)
        assert_gone(*pieces)
    finally:
        p.kill()
        cleanup.remove_leftovers(log=lambda m: None)


def test_cleanup_after_sigkill(env, tmp_path):
    p, dev, fs, hpath, hpid, state = start_owner(env, tmp_path / "killed")
    try:
        p.send_signal(signal.SIGKILL)
        p.wait()
        # Nothing unwound: the stack is still up.
        assert mounted(fs) and mounted(hpath) and loopdev.backing_file(dev)
        r = subprocess.run([bin_path("libception"), "cleanup"], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert_gone(dev, fs, hpath, hpid, state)
    finally:
        cleanup.remove_leftovers(log=lambda m: None)


def test_two_stacks_keep_their_own_devices(env, stack):
    a = stack(env["lib"], name="a")
    b = stack(env["lib"], name="b")
    assert a.dev != b.dev
    # Both owners are alive (this process): cleanup leaves both alone.
    subprocess.run([bin_path("libception"), "cleanup"], check=True, capture_output=True)
    assert loopdev.backing_file(a.dev) and loopdev.backing_file(b.dev)
    name = VIDEOS[5][0]
    a.unmount()
    assert loopdev.backing_file(b.dev) == os.path.join(b.hddsim.path, "disk")
    assert filecmp.cmp(os.path.join(b.path, name), env["copy"] / name, shallow=False)


def test_queue_knobs_recorded_as_the_kernel_took_them(env, stack):
    d = stack(env["lib"], queue={"scheduler": "mq-deadline", "max_sectors_kb": 4096,
                                 "nr_requests": 64})
    assert d.queue["scheduler"] == "mq-deadline"
    assert d.queue["nr_requests"] == 64
    # Above the loop device's hardware limit the kernel takes its limit.
    assert d.queue["max_sectors_kb"] == d.queue["max_hw_sectors_kb"] <= 4096
    d.read_ahead_kb = 1024
    assert d.read_ahead_kb == 1024 and d.queue["read_ahead_kb"] == 1024
    with pytest.raises(loopdev.LoopError, match="one of"):
        loopdev.set_queue(d.dev, {"scheduler": "no-such-elevator"})


def test_queue_starts_as_a_sata_disks_whatever_the_loop_device_kept(env, stack):
    # A loop device keeps its last user's knobs; the next stack on it
    # (the first free number: usually the same one) starts from a disk's.
    d = stack(env["lib"], name="first", queue={"scheduler": "bfq", "nr_requests": 32})
    d.read_ahead_kb = 4096
    dev = d.dev
    d.unmount()
    e = stack(env["lib"], name="second")
    want = blockdisk.SATA_QUEUE
    assert {k: e.queue[k] for k in want} == want, (dev, e.dev, e.queue)
    assert e.queue["nr_requests"] != 32


def test_rig_serves_nginx_from_the_block_disk(env, scratch, harness_port):
    """A benchmark configuration on the block disk: nginx in its cgroup
    serves the videos from ext4, the queue as configured."""
    with cleanup.Cleanup() as c:
        rig = Rig("t", str(scratch / "out"), c, None, None, port=harness_port)
        rig.disk = {"disk": "block", "scheduler": "mq-deadline", "read_ahead_kb": 256}
        cfg = rig.with_disk({"server": "nginx", "library": str(env["lib"]), "drive": "wd-red",
                             "memory_limit": 64 * MiB, "read_ahead_kb": 512})
        assert cfg["disk"] == "block" and cfg["read_ahead_kb"] == 512
        h = rig.setup(cfg, "blk")
        assert h.disk_queue[0]["scheduler"] == "mq-deadline"
        assert h.mount.read_ahead_kb == 512
        for name in (VIDEOS[3][0], "hd/c00001.mp4/000011"):
            status, body = http_get(harness_port, "/" + name)
            assert status == 200 and body == (env["copy"] / name).read_bytes(), name
        assert rig.snapshot(h)["disk"]["bytes"] > 0
        rig.teardown(h)
        assert not mounted(h.mount.path)


def _environ(pid):
    with open(f"/proc/{pid}/environ", "rb") as f:
        return f.read().split(b"\0")


@pytest.mark.skipif(tuple(map(int, os.uname().release.split(".")[:2])) < (6, 14),
                    reason="watch mode needs pre-content fanotify events (Linux 6.14)")
def test_rig_watch_mode_prefetches_for_caddy_without_the_library(env, scratch, harness_port):
    """Mode watch: receptiond --watch on the block disk's ext4 and no
    library in the server: Caddy (a Go server, out of the library's
    reach) serves the bytes and the daemon sees its misses."""
    with cleanup.Cleanup() as c:
        rig = Rig("t", str(scratch / "out"), c, None, None, port=harness_port)
        rig.disk = {"disk": "block"}
        cfg = rig.with_disk({"server": "caddy", "mode": "watch", "prefetch": "1M",
                             "library": str(env["lib"]), "drive": "wd-red",
                             "memory_limit": 64 * MiB})
        h = rig.setup(cfg, "watch")
        try:
            assert h.daemon.pid in h.group.pids()
            assert all(not any(v.startswith(b"LD_PRELOAD=") for v in _environ(p))
                       for p in h.server.pids())
            for name in (VIDEOS[3][0], "hd/c00001.mp4/000011"):
                status, body = http_get(harness_port, "/" + name)
                assert status == 200 and body == (env["copy"] / name).read_bytes(), name
            watch = rig.snapshot(h)["daemon"]["watch"]
            assert watch["paths"] == [h.mount.path] and watch["misses"] > 0
        finally:
            rig.teardown(h)
        assert not mounted(h.mount.path)


def test_rig_refuses_watch_mode_on_fuse(env, scratch, harness_port):
    with cleanup.Cleanup() as c:
        rig = Rig("t", str(scratch / "out"), c, None, None, port=harness_port)
        cfg = {"server": "nginx", "mode": "watch", "library": str(env["lib"]),
               "drive": "wd-red", "memory_limit": 64 * MiB}
        with pytest.raises(ValueError, match="needs the block disk"):
            rig.setup(cfg, "watchfuse")


def bench(out, *sets):
    cmd = [bin_path("libception"), "bench", "chunking", "--quick", "--only", "wc-unchunked",
           "--out", str(out)]
    for s in sets:
        cmd += ["--set", s]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


def test_bench_on_the_block_disk_records_it(env, tmp_path):
    r = bench(tmp_path / "out", "disk=block", "scheduler=bfq", "read_ahead_kb=1024")
    assert r.returncode == 0, r.stdout + r.stderr
    res = json.loads((tmp_path / "out" / "chunking.json").read_text())
    assert res["settings"]["disk"] == "block" and res["settings"]["scheduler"] == "bfq"
    runs = [x for x in res["runs"] if x["point"].get("part") == "wc"]
    assert runs and all(x["config"] == {"disk": "block", "fs": "ext4", "scheduler": "bfq",
                                        "read_ahead_kb": 1024} for x in runs)
    assert all(x["mb_per_s"] > 0 for x in runs)


@pytest.mark.parametrize("sets, message", [
    (["disk=floppy"], "disk 'floppy'"),
    (["disk=fuse", "scheduler=bfq"], "only with disk=block"),
    (["disk=block", "max_sectors_kb=-4"], "positive whole number"),
    (["disk=block", "fs=ntfs"], "fs 'ntfs'"),
])
def test_bench_refuses_bad_disk_settings(tmp_path, sets, message):
    r = bench(tmp_path / "out", *sets)
    assert r.returncode == 2 and message in r.stderr, r.stderr


def test_a_past_replayed_as_the_server_reads_leaves_the_kernels_read_ahead(env, stack):
    """A probe's past (bench/past.py) is replayed as nginx reads: a fresh
    open and sendfile per segment, so the kernel's read-ahead leaves its
    tail beyond the segment (a reader in 1 MiB pieces left none after a
    lone 512 KiB segment on ext4).  Where the daemon prefetches it is
    replayed as receptiond serves it: a window from a segment's first
    missing byte, nothing where the segment is cached, and no read-ahead."""
    from fixtures_common import cached_pages
    from libception.bench import past
    d = stack(env["big"])
    d.read_ahead_kb = 256
    path = os.path.join(d.path, "hd/big.mp4")
    S = MiB // 2
    segment = [(0, 8 * S, S, path)]
    past.replay(segment, "server")
    assert cached_pages(path, 8 * S, S) == S // 4096
    assert cached_pages(path, 9 * S, 0) > 0, "the kernel's read-ahead left nothing beyond"
    d.drop_cache([path])
    W = 2 * S   # a 1 MiB window
    ahead = past.replay([(0, 8 * S, S, path), (1, 9 * S, S, path), (2, 20 * S, S, path)],
                        "daemon", window=W)
    assert ahead == 2 * W, "a window for the first and the third; the second was cached"
    assert cached_pages(path, 8 * S, W) == W // 4096
    assert cached_pages(path, 20 * S, W) == W // 4096
    assert cached_pages(path, 0, 0) == 2 * W // 4096, "something read beyond the windows"
    # half a segment cached: the window starts at its first missing byte
    d.drop_cache([path])
    with open(path, "rb") as f:
        os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_RANDOM)   # no read-ahead
        os.preadv(f.fileno(), [bytearray(S // 2)], 0)
    assert past.replay([(0, 0, S, path)], "daemon", window=W) == W
    assert cached_pages(path, 0, S // 2 + W) == (S // 2 + W) // 4096
    assert cached_pages(path, 0, 0) == (S // 2 + W) // 4096


def resident_ranges(path, lo, hi):
    """[(first, end)] byte ranges of path's cached pages within [lo, hi)."""
    from fixtures_common import cached_pages
    runs, start = [], None
    for off in range(lo, hi + 4096, 4096):
        cached = off < hi and cached_pages(path, off, 4096)
        if cached and start is None:
            start = off
        elif not cached and start is not None:
            runs.append((start, off))
            start = None
    return runs


# Each server's ways of sending a file that the benchmark runs, and the
# seconds between the two requests (lighttpd closes a file unread for 2 s)
SENDERS = [("nginx", {}, 0), ("nginx", {"sendfile_max_chunk": 131072}, 0),
           ("nginx", {"aio": "threads"}, 0), ("nginx", {"sendfile": False}, 0),
           ("apache", {"sendfile": True}, 0), ("apache", {"sendfile": False, "mmap": True}, 0),
           ("apache", {"sendfile": False, "mmap": False}, 0),
           ("lighttpd", {"network_backend": "sendfile"}, 0),
           ("lighttpd", {"network_backend": "sendfile"}, 3.5),
           ("lighttpd", {"network_backend": "writev"}, 0),
           ("lighttpd", {"network_backend": "write"}, 0), ("caddy", {}, 0)]


@pytest.mark.parametrize("server, tunables, gap_s", SENDERS,
                         ids=[f"{s}-{'-'.join(f'{k}={v}' for k, v in t.items()) or 'default'}"
                              + (f"-{g}s-apart" if g else "") for s, t, g in SENDERS])
def test_a_past_replayed_as_the_server_sends_reads_around_as_the_server_does(
        env, stack, scratch, harness_port, server, tunables, gap_s):
    """The kernel reads ahead of a segment according to how the server
    sends it: sendfile whole or in pieces, read() in pieces, through a
    mapping (Apache as Debian ships it: read around the first fault,
    before the segment too), from a descriptor opened per request or one
    kept open (lighttpd: its read-ahead state carries over).  The past
    replays two segments as server_plan says: both resident, and the
    pages before them as the real server leaves them (a mapping's
    read-around).  The tail beyond is not compared: a server's varies
    from run to run with how fast the socket drains (nginx at
    read_ahead_kb 1024: 0.75 MiB beyond the segments in a CI run, 64 KiB
    with aio threads, 1.75 in local runs), where the replay reads at
    once."""
    from libception import servers
    from libception.bench import past
    d = stack(env["big"])
    d.read_ahead_kb = 1024
    path = os.path.join(d.path, "hd/big.mp4")
    S = MiB // 2
    segments = [(0, 8 * S, S, path), (gap_s, 9 * S, S, path)]

    def left():
        return resident_ranges(path, 6 * S, 12 * S + 8 * MiB)

    d.drop_cache([path])
    s = servers.make_server(server, scratch / "server", d.path, harness_port, tunables)
    s.start()
    try:
        for _, off, n, _ in segments:
            c = http.client.HTTPConnection("127.0.0.1", harness_port, timeout=60)
            c.request("GET", "/hd/big.mp4", headers={"Range": f"bytes={off}-{off + n - 1}"})
            r = c.getresponse()
            assert (r.status, len(r.read())) == (206, n)
            c.close()
            time.sleep(gap_s if off == 8 * S else 0)
    finally:
        s.stop()
    by_server = left()
    assert by_server[0][0] <= 8 * S < 10 * S < by_server[-1][1], by_server
    d.drop_cache([path])
    plan = past.server_plan({"server": server, "tunables": tunables})
    past.replay(segments, "server", plan=plan)
    replayed = left()
    assert replayed[0][0] == by_server[0][0], (plan, replayed, by_server)
    assert replayed[0][0] <= 8 * S < 10 * S <= replayed[0][1], (plan, replayed)


def test_a_session_entering_the_past_mid_window_gets_the_windows_rest(env, stack):
    """A session watching since before the past's oldest replayed segment
    enters the replay in the middle of a window the daemon read when it
    crossed into it (windows lie on the file's grid: sessions start at
    its first byte).  A whole window from there put all such sessions'
    windows in one phase, and their next misses came as one wave at
    every probe's start."""
    from fixtures_common import cached_pages
    from libception.bench import past
    d = stack(env["big"])
    path = os.path.join(d.path, "hd/big.mp4")
    S, W = MiB // 2, 2 * MiB
    # enters at 9S, in the window [8S, 12S); then 10S and 11S are hits
    # and 12S, which follows a replayed segment, is a miss of its own
    session = [(t, (9 + t) * S, S, path) for t in range(4)]
    assert past.replay(session, "daemon", window=W) == 3 * S + W
    assert cached_pages(path, 9 * S, 3 * S + W) == (3 * S + W) // 4096
    assert cached_pages(path, 0, 0) == (3 * S + W) // 4096, "a window beyond the grid's"


def test_a_past_replayed_as_the_daemon_reads_sends_each_page_once(env, stack):
    """The daemon's windows are loaded without marking a page accessed
    (receptiond maps them, prefetch.c map_piece), so the server's send is
    a prefetched page's first access, as under libception: a past whose
    reader read its windows made every sent page a second access, and the
    kernel put it on the active list, where reclaim does not look first."""
    from fixtures_common import cached_pages
    from libception.bench import past
    d = stack(env["big"])
    path = os.path.join(d.path, "hd/big.mp4")
    S, W = MiB // 2, 4 * MiB
    segments = [(t, (8 + t) * S, S, path) for t in range(16)]   # two windows
    # Counted while the group stands, with room to spare: removing it,
    # or reclaim near its limit, takes pages this test does not judge.
    with cgroup.MemoryGroup(f"test-blockdisk-past-{os.getpid()}", 256 * MiB) as g:
        assert past.replay(segments, "daemon", g.procs_file(), window=W) == 2 * W
        lists = g.file_lists()
        assert cached_pages(path, 8 * S, 2 * W) == 2 * W // 4096
    assert lists["inactive_file"] >= 16 * S, lists
    assert lists["active_file"] < S, f"sent pages made active: {lists}"
