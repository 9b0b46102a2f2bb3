"""receptiond's queue order on real file systems (docs/receptiond.md
QUEUE ORDER).

- Placement: on an ext4 file system 1 MiB into the image of a loop device
  on the local disk, the daemon's idea of where a window lies (the head
  position it reports after reading it) is filefrag's physical offset plus
  that 1 MiB.
- Order: on ext4 over a loop device over a file hddsim serves (a file of a
  directory, or hddsim's disk mode), eight misses sent in scattered offset
  order are read (per hddsim's trace) in disk position order; --order fifo
  keeps the sent order.
- Users in turn: a flood of 64 MiB windows from one user is cut after a
  share when another user's miss arrives, which goes next.
- Abandoned: queued misses of a client that hung up are dropped unread.
"""
import contextlib
import os
import re
import subprocess
import textwrap
import time

import pytest

from conftest import BIN
from fixtures_daemon import RECEPTIOND, make_cold_file
from libception import daemon as lcd
from libception import hddsim

MiB = 1 << 20
WINDOW = 64 << 10
SENT = (1, 16, 4, 11, 8, 20, 6, 13)   # MiB into the file, in the order sent

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="loop devices and mounts need root")


def run(*cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip()


@contextlib.contextmanager
def loop_device(image, *flags):
    dev = run("losetup", "--find", "--show", *flags, str(image))
    try:
        yield dev
    finally:
        subprocess.run(["losetup", "-d", dev], check=False)


@contextlib.contextmanager
def mounted(dev, where, *opts):
    where.mkdir(exist_ok=True)
    run("mount", *(["-o", ",".join(opts)] if opts else []), dev, str(where))
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=False)


def extents(path):
    """filefrag -v's extents of path: (logical, physical, length) in bytes."""
    out = run("filefrag", "-v", str(path))
    block = int(re.search(r"blocks of (\d+) bytes", out).group(1))
    rows = re.findall(r"^\s*\d+:\s+(\d+)\.\.\s*(\d+):\s+(\d+)\.\.\s*\d+:\s+(\d+):", out, re.M)
    return [(int(lo) * block, int(ph) * block, int(n) * block) for lo, _, ph, n in rows]


def physical(path, offset):
    for lo, ph, n in extents(path):
        if lo <= offset < lo + n:
            return ph + (offset - lo)
    raise AssertionError(f"{path}: offset {offset} in no extent")


def device_stats(d, name):
    devs = [x for x in d.stats()["devices"] if x["name"] == name]
    assert devs, f"no device {name} in {[x['name'] for x in d.stats()['devices']]}"
    return devs[0]


def test_placement_on_ext4_at_an_offset(tmp_path, make_daemon):
    """The file system starts 1 MiB into the loop device's backing file (as
    in a partition; this kernel reads no partition tables): the daemon's
    disk offsets are the backing file's, as hddsim's would be."""
    image = tmp_path / "disk.img"
    with open(image, "wb") as f:
        f.truncate(96 * MiB)
    with loop_device(image, "--offset", str(MiB)) as disk:
        run("mkfs.ext4", "-q", "-F", "-b", "4096", "-O", "^has_journal", disk)
        with mounted(disk, tmp_path / "mnt") as mnt:
            files = [make_cold_file(str(mnt / f"f{i}"), 12 * MiB, seed=i) for i in range(2)]
            position = make_daemon()
            fifo = make_daemon(["--order", "fifo"])
            name = os.path.basename(disk)
            with lcd.connect(position.path) as s:
                for n, (path, off) in enumerate([(files[0], 3 * MiB), (files[1], 0),
                                                 (files[0], 9 * MiB + 4096)]):
                    with open(path, "rb") as f:
                        r = lcd.ensure(s, f.fileno(), off, WINDOW, req_id=n + 1,
                                       flags=lcd.F_NO_PREFETCH)
                    assert r["status_name"] == "ok" and r["bytes_read"] > 0
                    order = device_stats(position, name)["order"]
                    assert order["placed_reads"] == n + 1
                    # the head ends where the window ends on the disk
                    assert order["head"] == MiB + physical(path, off) + WINDOW
            # `libception stats` shows the order's picks: three by the sweep
            text = run(os.path.join(BIN, "libception"), "stats", "--socket", position.path)
            assert "demand wait p50/p90/p99/max" in text
            assert re.search(rf"^{name}\s+position\s+0/3/0\s", text, re.M), text
            with lcd.connect(fifo.path) as s, open(files[1], "rb") as f:
                r = lcd.ensure(s, f.fileno(), 6 * MiB, WINDOW, flags=lcd.F_NO_PREFETCH)
                assert r["status_name"] == "ok" and r["bytes_read"] > 0
            order = device_stats(fifo, name)["order"]
            # fifo orders without positions, but knows them (head travel)
            assert order["mode"] == "fifo" and order["picks"]["fifo"] == 1
            assert order["head"] == MiB + physical(files[1], 6 * MiB) + WINDOW


def trace_rows(path):
    rows = []
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                continue
            t, pos, length = line.split()[:3]
            rows.append((float(t), int(pos), int(length)))
    return rows


def hddsim_has_disk_mode():
    out = subprocess.run([hddsim.binary(), "--help"], capture_output=True, text=True)
    return "--disk" in out.stdout + out.stderr


@contextlib.contextmanager
def hddsim_disk(image, where, trace):
    """hddsim's disk mode over image with an empty extent map: MOUNT/disk
    is the image, byte for byte (docs/hddsim.md "Disk mode")."""
    dmap = f"{image}.map"
    with open(dmap, "w") as f:
        f.write(f"lcdm 1\ndisk {os.path.getsize(image)}\n")
    where.mkdir()
    proc = subprocess.Popen([hddsim.binary(), str(where), "--disk", str(image), "--disk-map", dmap,
                             "--trace", str(trace), "--readahead", "0"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while not os.path.exists(where / "disk"):
            assert proc.poll() is None and time.monotonic() < deadline, "hddsim --disk did not mount"
            time.sleep(0.02)
        yield where / "disk"
    finally:
        subprocess.run(["fusermount3", "-u", str(where)], check=False, stderr=subprocess.DEVNULL)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(params=["directory", "disk"])
def ext4_on_hddsim(request, tmp_path, hddsim_mount):
    """An ext4 image (one 24 MiB file, "big") served by hddsim, read through
    a read-only direct-I/O loop device: hddsim's trace positions are the
    image's offsets, so FIEMAP's physical offsets.  hddsim serves it as a
    file of a directory (the image is the first file: platter offset 0) or
    in disk mode; yields (stop, big, trace, device name), stop() tearing
    the stack down in order (it flushes the trace)."""
    if request.param == "disk" and not hddsim_has_disk_mode():
        pytest.skip("this hddsim has no --disk (branch hddsim-disk); directory mode covers it")
    src, lib = tmp_path / "src", tmp_path / "lib"
    src.mkdir()
    lib.mkdir()
    with open(src / "big", "wb") as f:
        f.write(os.urandom(24 * MiB))
    image = lib / "disk.img"
    with open(image, "wb") as f:
        f.truncate(64 * MiB)
    run("mkfs.ext4", "-q", "-F", "-b", "4096", "-O", "^has_journal", "-d", str(src), str(image))
    trace = tmp_path / "trace"
    with contextlib.ExitStack() as stack:
        if request.param == "disk":
            served = stack.enter_context(hddsim_disk(image, tmp_path / "hd", trace))
        else:
            m = hddsim_mount(lib, name="hd", trace=trace, readahead=0, meta_group=0)
            stack.callback(m.unmount)
            served = os.path.join(m.path, "disk.img")
        dev = stack.enter_context(loop_device(served, "--read-only", "--direct-io=on"))
        mnt = stack.enter_context(mounted(dev, tmp_path / "mnt", "ro", "noload"))
        yield stack.close, mnt / "big", trace, os.path.basename(dev)


@pytest.mark.parametrize("mode", ["position", "fifo"])
def test_trace_shows_position_order(ext4_on_hddsim, make_daemon, mode):
    stop, big, trace, name = ext4_on_hddsim
    d = make_daemon(["--order", mode])
    phys = {mib: physical(big, mib * MiB) for mib in SENT}
    with lcd.connect(d.path) as s, open(big, "rb") as f:
        for i, mib in enumerate(SENT):
            lcd.send_msg(s, lcd.pack_ensure(mib * MiB, WINDOW, i + 1, flags=lcd.F_NO_PREFETCH),
                         [f.fileno()])
        replies = [lcd.recv_ensure_reply(s) for _ in SENT]
    assert all(r["status_name"] == "ok" for r in replies), replies
    st = device_stats(d, name)["order"]
    # The daemon may still hold the file for a moment after its replies:
    # ext4 would be busy, hddsim could not unmount and flush its trace.
    d.kill()
    stop()   # ext4, loop device, hddsim: flushes the trace

    served = []
    for _, pos, length in trace_rows(trace):
        for mib, p in phys.items():
            if p <= pos < p + WINDOW and mib not in served:
                served.append(mib)
    assert sorted(served) == sorted(SENT), f"trace lacks some windows: {served}"
    if mode == "fifo":
        assert served == list(SENT)
        assert st["placed_reads"] == len(SENT) and st["picks"]["fifo"] == len(SENT)
        return
    # The first may be taken before the rest arrive; from there one sweep
    # up the disk, then from the lowest.
    first = served[0]
    assert first in (SENT[0], min(SENT, key=phys.get))
    head = phys[first] + WINDOW
    rest = sorted((x for x in SENT if x != first), key=phys.get)
    expected = [first] + [x for x in rest if phys[x] >= head] + [x for x in rest if phys[x] < head]
    assert served == expected, f"served {served}, positions {phys}"
    assert st["placed_reads"] == len(SENT)
    assert st["picks"]["sweep"] == len(SENT)
    assert st["wait_demand_us"]["count"] == len(SENT)


def test_fuse_places_nothing(hddsim_mount, small_library, make_daemon):
    """FUSE has no FIEMAP: its windows keep arrival order and the daemon
    never asks (placement.c checks for a block device first).  Queue
    waits are split by whether a program waits (a look-ahead does not)."""
    m = hddsim_mount(small_library)
    path = next(os.path.join(top, n) for top, _, names in os.walk(m.path) for n in names
                if ".hddsim" not in top)
    d = make_daemon()
    with lcd.connect(d.path) as s, open(path, "rb") as f:
        ahead = lcd.pack_ensure(4 * WINDOW, WINDOW, 1, flags=lcd.F_LOOKAHEAD | lcd.F_NO_PREFETCH)
        lcd.send_msg(s, ahead, [f.fileno()])
        assert lcd.ensure(s, f.fileno(), 0, WINDOW, req_id=2,
                          flags=lcd.F_NO_PREFETCH)["status_name"] == "ok"
        # connected until the look-ahead is read: a hang-up would drop it
        deadline = time.monotonic() + 30
        while True:
            dev = next(x for x in d.stats()["devices"] if x["name"].startswith("fuse"))
            if dev["reads"] == 2 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
    o = dev["order"]
    assert o["placed_reads"] == 0 and o["head"] == -1 and o["picks"]["fifo"] == 2
    assert o["wait_demand_us"]["count"] == 1 and o["wait_lookahead_us"]["count"] == 1


FLOOD = textwrap.dedent("""
    import os, sys
    sys.path.insert(0, sys.argv[1])
    from libception import daemon as lcd
    path, sock_path, n = sys.argv[2], sys.argv[3], int(sys.argv[4])
    socks = [lcd.connect(sock_path, timeout=120) for _ in range(n)]
    with open(path, "rb") as f:
        for i, s in enumerate(socks):
            lcd.send_msg(s, lcd.pack_ensure(i * (64 << 20), 64 << 20, 1), [f.fileno()])
    print("sent", flush=True)
    for s in socks:
        assert lcd.recv_ensure_reply(s)["status_name"] == "ok"
""")


def access_all():
    """Let every local user in, where the daemon restricts who may connect."""
    helptext = subprocess.run([RECEPTIOND, "--help"], capture_output=True, text=True).stdout
    return ["--access", "all"] if "--access" in helptext else []


def test_users_take_turns(tmp_path, hddsim_mount, make_daemon):
    """Another user's flood of 64 MiB windows (4 of them) is cut after a
    share: root's miss is read after a few MiB of the flood, not 256."""
    src = tmp_path / "files"
    src.mkdir()
    for name, size in (("flood", 256 * MiB), ("own", 4 * MiB)):
        with open(src / name, "wb") as f:
            f.truncate(size)
    trace = tmp_path / "trace"
    m = hddsim_mount(src, name="hd", trace=trace, readahead=0, meta_group=0)
    d = make_daemon(access_all())
    os.chmod(d.path, 0o777)
    harness = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "harness")
    # the system's python: nobody may not enter the test's interpreter's tree
    flood = subprocess.Popen(["/usr/bin/python3", "-c", FLOOD, harness,
                              os.path.join(m.path, "flood"), d.path, "4"],
                             user=65534, stdout=subprocess.PIPE, text=True)
    try:
        assert flood.stdout.readline().strip() == "sent"
        with lcd.connect(d.path) as s, open(os.path.join(m.path, "own"), "rb") as f:
            r = lcd.ensure(s, f.fileno(), 0, WINDOW, flags=lcd.F_NO_PREFETCH)
        assert r["status_name"] == "ok"
        assert flood.wait(120) == 0
    finally:
        if flood.poll() is None:
            flood.kill()
            flood.wait()
    st = next(x for x in d.stats()["devices"] if x["name"].startswith("fuse"))
    m.unmount()
    # hddsim lays "flood" out first, then "own": positions tell them apart
    rows = trace_rows(trace)
    own_at = min(i for i, (_, pos, _) in enumerate(rows) if pos >= 256 * MiB)
    flood_before = sum(n for _, pos, n in rows[:own_at] if pos < 256 * MiB)
    flood_total = sum(n for _, pos, n in rows if pos < 256 * MiB)
    assert flood_total >= 256 * MiB
    # FIFO would read all 256 MiB first; in turn, root waits for the share
    # in flight when it asked (the flood's first window was cut)
    assert flood_before < 64 * MiB, (flood_before, st)
    assert st["order"]["cuts"] >= 1 and st["order"]["user_turns"] >= 1


def test_requests_nobody_waits_for_are_dropped(tmp_path, hddsim_mount, make_daemon):
    """A client queues four 64 MiB misses and hangs up, as the library does
    when its wait times out: the window being read runs to its end, the
    queued ones are dropped unread (`abandoned`), and hddsim's trace shows
    the disk read only the windows counted as read."""
    src = tmp_path / "files"
    src.mkdir()
    with open(src / "big", "wb") as f:
        f.truncate(256 * MiB)
    trace = tmp_path / "trace"
    m = hddsim_mount(src, name="hd", trace=trace, readahead=0, meta_group=0)
    d = make_daemon()
    path = os.path.join(m.path, "big")
    with lcd.connect(d.path) as s, open(path, "rb") as f:
        for i in range(4):
            lcd.send_msg(s, lcd.pack_ensure(i * 64 * MiB, 64 * MiB, i + 1,
                                            flags=lcd.F_NO_PREFETCH), [f.fileno()])
    deadline = time.monotonic() + 60
    while True:
        dev = next(x for x in d.stats()["devices"] if x["name"].startswith("fuse"))
        if dev["reads"] + dev["abandoned"] == 4 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    # the first may be in flight before the hang-up is seen, not the rest
    assert dev["abandoned"] >= 2 and dev["reads"] + dev["abandoned"] == 4, dev
    # what they held is given back: the next client is served as before
    with lcd.connect(d.path) as s, open(path, "rb") as f:
        r = lcd.ensure(s, f.fileno(), 255 * MiB, WINDOW, req_id=5, flags=lcd.F_NO_PREFETCH)
    assert r["status_name"] == "ok", r
    prom = subprocess.run([os.path.join(BIN, "libception"), "stats", "--socket", d.path,
                           "--prometheus"], capture_output=True, text=True, timeout=30).stdout
    name = dev["name"]
    assert f'libception_device_abandoned_total{{device="{name}"}} {dev["abandoned"]}' in prom
    # the order table's "gone" column: device, order, picks, turns, cuts, misses, gone
    table = subprocess.run([os.path.join(BIN, "libception"), "stats", "--socket", d.path],
                           capture_output=True, text=True, timeout=30).stdout
    row = next(line for line in table.splitlines() if line.startswith(f"{name} ")
               and " position " in line)
    assert row.split()[6] == str(dev["abandoned"]), (row, table)
    m.unmount()
    read = sum(n for _, _, n in trace_rows(trace))
    assert read <= dev["reads"] * 64 * MiB + WINDOW, (read, dev)


@pytest.mark.parametrize("args, says", [
    (["--order", "sptf"], '--order "sptf": expected position or fifo'),
    (["--deadline", "soon"], '--deadline "soon": expected milliseconds'),
    (["--inflight", "0"], '--inflight "0": expected a number from 1 to 64'),
    (["--inflight", "65"], '--inflight "65": expected a number from 1 to 64'),
])
def test_order_options_refused(args, says):
    r = subprocess.run([RECEPTIOND, "--foreground", "--socket", "/nonexistent/rd.sock", *args],
                       capture_output=True, text=True, timeout=10)
    assert r.returncode == 2 and r.stderr.startswith(f"receptiond: {says}"), r.stderr
